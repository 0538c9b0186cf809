# Opinion survey (OpinionQA, Santurkar et al. 2023) as simsubjects/studies/opinion_survey/analysis.py: the model's
# answer distribution per question for the default prompt and for the personas pooled (each
# subject's distribution is the mean of its per-trial shares over the orderings it was shown; the
# personas' pool is weighted by persona_weight), beside the human rows of every group.

#' @rdname opinion_survey
#' @export
opinion_distributions <- function(responses) {
  r <- .plain(responses, "responses")
  for (c in names(r)) if (is.factor(r[[c]])) r[[c]] <- as.character(r[[c]])
  r <- r[r$source != "human", , drop = FALSE]
  r$subject[is.na(r$subject)] <- ""
  r$weight <- as.numeric(r$weight)
  tid <- paste(r$model, r$trial, sep = "\r")
  r$share <- r$weight / stats::ave(r$weight, tid, FUN = sum)
  sk <- paste(r$model, r$subject, r$key, sep = "\r")
  ntr <- stats::ave(seq_along(tid), sk, FUN = function(i) length(unique(tid[i])))
  r$share <- r$share / ntr
  r$pw <- if ("persona_weight" %in% names(r)) as.numeric(r$persona_weight) else 1
  r$pw[is.na(r$pw)] <- 1
  r$prompt <- ifelse(r$subject == "", "default", "personas")
  g <- paste(r$model, r$prompt, r$key, r$response, sep = "\r")
  num <- tapply(r$pw * r$share, g, sum)
  out <- r[!duplicated(g), c("model", "prompt", "key", "response", "position", "refusal"), drop = FALSE]
  out$g <- g[!duplicated(g)]
  subj <- r[!duplicated(sk), , drop = FALSE]
  den <- tapply(subj$pw, paste(subj$model, subj$prompt, subj$key, sep = "\r"), sum)
  out$weight <- as.numeric(num[out$g]) / as.numeric(den[paste(out$model, out$prompt, out$key, sep = "\r")])
  out$model <- paste(out$model, out$prompt, sep = " | ")
  out$position <- as.numeric(out$position)
  out$refusal <- as.logical(out$refusal)
  rownames(out) <- NULL
  out[, c("model", "key", "response", "position", "refusal", "weight")]
}

#' Opinion Survey: the Model's Answer Distributions and Their Representativeness by Group
#'
#' For a table exported by \samp{simsubjects export} from an \samp{opinion-survey} run: the model's
#' answer distribution per question for the default prompt and for the personas pooled (each
#' subject's distribution is the mean of its per-trial shares over the option orderings it was shown;
#' the personas are weighted by \code{persona_weight}), and the representativeness of each to every
#' human group and \code{"Overall"} (Santurkar et al. 2023). The numbers agree with
#' \samp{simsubjects.studies.opinion_survey.analysis}.
#'
#' @param responses the tidy responses table of the run: model rows (\code{model, trial, subject, key, response, position, refusal, weight}, optionally \code{persona_weight}) and human rows (\code{source = "human"}, with \code{attribute, group}).
#' @template conf_level
#' @return
#' \code{opinion_distributions}: \code{model} (\code{"<model> | default"} or
#' \code{"<model> | personas"}), \code{key, response, position, refusal, weight}.
#' \code{opinion_representativeness}: \code{\link{representativeness}} with \code{by = c("attribute", "group")}.
#' @examples
#' r <- data.frame(source = c("model", "model", "human", "human"), model = c("m", "m", "people", "people"),
#'                 trial = c("t", "t", "h", "h"), subject = "", key = "Q", response = c("A", "B", "A", "B"),
#'                 position = c(1, 2, 1, 2), refusal = FALSE, weight = c(0.5, 0.5, 3, 1),
#'                 attribute = "Overall", group = "Overall")
#' opinion_representativeness(r)
#' @rdname opinion_survey
#' @export
opinion_representativeness <- function(responses, conf.level = 0.95) {
  responses <- .plain(responses, "responses")
  h <- responses[as.character(responses$source) == "human",
                 c("key", "attribute", "group", "position", "refusal", "weight"), drop = FALSE]
  for (c in names(h)) if (is.factor(h[[c]])) h[[c]] <- as.character(h[[c]])
  h$refusal <- as.logical(h$refusal)
  representativeness(opinion_distributions(responses), h, by = c("attribute", "group"), conf.level = conf.level)
}
