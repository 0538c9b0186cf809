# Every person's answers scored under the model (issue 39), recomputed in R from the tidy responses for
# `simsubjects analyze RUN --check-r` (simsubjects/studyfile/check_r.py; Python: analyze/methods/fit.py
# on studyfile/people_fit.py's decision frame). Internal. The model's exact distribution of each person's
# decision (a study file with design.subjects: people: the trials of that person x item x condition,
# averaged over option orders and repetitions, normalized over the options) is joined to the answer the
# person gave (the human rows); the person is the unit.

.fit_blank <- function(x) ifelse(is.na(x), "", as.character(x))

# One row per model x ablation x person: n_decisions, loglik (sum of log p(answer)), loglik_mean,
# loglik_uniform (sum of log(1/k)), accuracy (share of answers that are the model's most probable
# option) and brier (mean over decisions of the summed squared error over the options).
sf_fit_people <- function(responses) {
  d <- as.data.frame(responses, stringsAsFactors = FALSE)
  d$ablation <- if ("ablation" %in% names(d)) .fit_blank(d$ablation) else ""
  d$condition <- .fit_blank(d$condition)
  m <- d[d$source == "model" & d$method == "exact", , drop = FALSE]
  dec <- paste(m$model, m$ablation, m$subject, m$item, m$condition, sep = "\r")
  m$share <- m$weight / stats::ave(m$weight, paste(dec, m$trial, sep = "\r"), FUN = sum)
  n_trials <- tapply(m$trial, dec, function(t) length(unique(t)))
  opt <- paste(dec, m$response, sep = "\r")
  p <- tapply(m$share, opt, sum)
  first <- m[!duplicated(opt), c("model", "ablation", "subject", "item", "condition", "response"), drop = FALSE]
  first$dec <- paste(first$model, first$ablation, first$subject, first$item, first$condition, sep = "\r")
  first$p <- as.numeric(p[paste(first$dec, first$response, sep = "\r")]) / as.numeric(n_trials[first$dec])
  first$p <- first$p / stats::ave(first$p, first$dec, FUN = sum)
  h <- d[d$source == "human", c("subject", "item", "condition", "response"), drop = FALSE]
  h$answer <- as.character(h$response)
  per <- do.call(rbind, lapply(split(first, first$dec), function(g) {
    a <- h$answer[h$subject == g$subject[1] & h$item == g$item[1] & h$condition == g$condition[1]]
    if (length(a) != 1 || !(a %in% g$response)) return(NULL)
    pa <- g$p[g$response == a]
    data.frame(model = g$model[1], ablation = g$ablation[1], person = g$subject[1], loglik = log(pa),
               uniform = log(1 / nrow(g)), hit = !any(g$p > pa),
               brier = sum(g$p^2) - 2 * pa + 1, stringsAsFactors = FALSE)
  }))
  .fit_by_person(per)
}

# One row per model x ablation x person from one row per scored decision (model, ablation, person, loglik,
# uniform, hit, brier): the summaries both twins share.
.fit_by_person <- function(per) {
  key <- paste(per$model, per$ablation, per$person, sep = "\r")
  out <- per[!duplicated(key), c("model", "ablation", "person")]
  k <- paste(out$model, out$ablation, out$person, sep = "\r")
  out$n_decisions <- as.numeric(tapply(per$loglik, key, length)[k])
  out$loglik <- as.numeric(tapply(per$loglik, key, sum)[k])
  out$loglik_mean <- out$loglik / out$n_decisions
  out$loglik_uniform <- as.numeric(tapply(per$uniform, key, sum)[k])
  out$accuracy <- as.numeric(tapply(per$hit, key, mean)[k])
  out$brier <- as.numeric(tapply(per$brier, key, mean)[k])
  rownames(out) <- NULL
  out
}

# The same per person for a session with paths: people (teacher forcing): each decision of the subject is
# its rows (condition "decision", player "subject") of one trial and step; p = the option's weight over the
# decision's options; the person's recorded answer is the option the path went on with (drawn = 1). A
# decision without one (an answer that matched no option) is not scored, as in Python's unmatched list.
sf_fit_session_people <- function(responses) {
  d <- as.data.frame(responses, stringsAsFactors = FALSE)
  d$ablation <- if ("ablation" %in% names(d)) .fit_blank(d$ablation) else ""
  m <- d[d$source == "model" & d$condition == "decision" & d$player == "subject", , drop = FALSE]
  dec <- paste(m$model, m$ablation, m$trial, m$step, m$item, sep = "\r")
  m$p <- m$weight / stats::ave(m$weight, dec, FUN = sum)
  per <- do.call(rbind, lapply(split(m, dec), function(g) {
    if (sum(g$drawn == 1) != 1) return(NULL)
    pa <- g$p[g$drawn == 1]
    data.frame(model = g$model[1], ablation = g$ablation[1], person = g$subject[1], loglik = log(pa),
               uniform = log(1 / nrow(g)), hit = !any(g$p > pa), brier = sum(g$p^2) - 2 * pa + 1,
               stringsAsFactors = FALSE)
  }))
  .fit_by_person(per)
}

# McFadden's pseudo-R^2 against the uniform choice per model x ablation: 1 - sum(loglik) / sum(loglik_uniform)
# (Centaur: Binz et al., Nature 2025).
sf_fit_study <- function(people) {
  key <- paste(people$model, people$ablation, sep = "\r")
  out <- people[!duplicated(key), c("model", "ablation")]
  k <- paste(out$model, out$ablation, sep = "\r")
  out$loglik <- as.numeric(tapply(people$loglik, key, sum)[k])
  out$loglik_baseline <- as.numeric(tapply(people$loglik_uniform, key, sum)[k])
  out$estimate <- 1 - out$loglik / out$loglik_baseline
  out$n_people <- as.numeric(tapply(people$person, key, length)[k])
  out$n_decisions <- as.numeric(tapply(people$n_decisions, key, sum)[k])
  rownames(out) <- NULL
  out
}
