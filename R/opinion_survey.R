# Opinion survey (OpinionQA, Santurkar et al. 2023) as simsubjects/analyze/opinion.py: the model's
# answer distribution per question for the default prompt and for the personas pooled (each
# subject's distribution is the mean of its per-trial shares over the orderings it was shown; the
# personas' pool is weighted by persona_weight), beside the human rows of every group.

opinion_distributions <- function(responses) {
  r <- responses
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

opinion_representativeness <- function(responses, conf.level = 0.95) {
  h <- responses[as.character(responses$source) == "human",
                 c("key", "attribute", "group", "position", "refusal", "weight"), drop = FALSE]
  for (c in names(h)) if (is.factor(h[[c]])) h[[c]] <- as.character(h[[c]])
  h$refusal <- as.logical(h$refusal)
  representativeness(opinion_distributions(responses), h, by = c("attribute", "group"), conf.level = conf.level)
}
