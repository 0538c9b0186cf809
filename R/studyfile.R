# The analyses of a study file (simsubjects/studyfile/analyses.py) recomputed in R from the tidy
# responses, for `simsubjects analyze RUN --check-r` (simsubjects/studyfile/check_r.py). Internal:
# each function takes the responses (one row per trial x response, as responses.parquet) and the
# options table (item, response, position, refusal) of the study file, and returns tidy rows with
# broom's names. Every test has the subject as its unit: a subject's value is the mean over its
# trials (option orders, repeated draws), as in docs/conventions.md.

.sf_id <- function(d, cols) {
  if (!length(cols)) return(rep("", nrow(d)))
  do.call(paste, c(lapply(d[cols], as.character), sep = "\r"))
}

.sf_key <- function(d) intersect(c("source", "model", "run", "trial"), names(d))

.sf_shares <- function(responses) {
  id <- .sf_id(responses, .sf_key(responses))
  responses$share <- responses$weight / stats::ave(responses$weight, id, FUN = sum)
  responses$.trial <- id
  responses
}

# One row per trial: its first row's columns, `score` (the expected ordinal position over the
# non-refusal options; an estimate's value) and `tw` (a person's survey weight, 1 for the model).
.sf_trial_scores <- function(responses, options) {
  d <- .sf_shares(responses)
  j <- match(paste(d$item, d$response, sep = "\r"), paste(options$item, options$response, sep = "\r"))
  pos <- as.numeric(options$position[j])
  ok <- !is.na(pos) & !(as.logical(options$refusal[j]) %in% TRUE)
  num <- tapply(ifelse(ok, d$share * pos, 0), d$.trial, sum)
  den <- tapply(ifelse(ok, d$share, 0), d$.trial, sum)
  first <- d[!duplicated(d$.trial), , drop = FALSE]
  den <- as.numeric(den[first$.trial])
  score <- as.numeric(num[first$.trial]) / ifelse(den > 0, den, NA_real_)
  if ("estimate" %in% names(first)) score <- ifelse(is.na(score), suppressWarnings(as.numeric(first$estimate)), score)
  first$score <- score
  first$tw <- ifelse(first$source == "human", first$weight, 1)
  first
}

.sf_weighted <- function(w) length(w) > 0 && all(is.finite(w)) && !isTRUE(all.equal(w, rep(w[1], length(w)), tolerance = 1e-8))

# A subject's mean score (and weight) per value of `col`
.sf_units <- function(s, col = NULL) {
  g <- .sf_id(s, c("subject", col))
  first <- !duplicated(g)
  u <- data.frame(subject = as.character(s$subject[first]), stringsAsFactors = FALSE)
  if (!is.null(col)) u$f <- as.character(s[[col]][first])
  u$score <- as.numeric(tapply(s$score, g, mean)[g[first]])
  u$tw <- as.numeric(tapply(s$tw, g, mean)[g[first]])
  u
}

.sf_groups <- function(d, by) {
  cols <- c("source", "model", by)
  g <- .sf_id(d, cols)
  keep <- stats::complete.cases(d[cols])
  lapply(unique(g[keep]), function(k) d[g == k & keep, , drop = FALSE])
}

.sf_t_row <- function(res, est, n) {
  data.frame(estimate = est, std.error = res$stderr, statistic = unname(res$statistic),
             df = unname(res$parameter), p.value = res$p.value, conf.low = res$conf.int[1],
             conf.high = res$conf.int[2], n = n)
}

# t.test, or no inference where R stops ("data are essentially constant"): the package's one rule for a
# sample without spread (simsubjects/analyze/methods/tests.py no_test; docs/conventions.md): the exact
# value with standard error 0 and the point interval, no statistic and no p-value; `df` where its formula
# needs no variance (n - 1 for one sample), else NA (Welch's)
.sf_t <- function(est, n, fn, df = NA_real_) {
  tryCatch(.sf_t_row(fn(), est, n), error = function(e)
    data.frame(estimate = est, std.error = 0, statistic = NA_real_, df = df, p.value = NA_real_,
               conf.low = est, conf.high = est, n = n))
}

.sf_key_cols <- function(s, by) s[1, c("source", "model", by), drop = FALSE]

sf_welch <- function(responses, options, factor, levels, by = "item") {
  d <- .sf_trial_scores(responses, options)
  d <- d[!is.na(d$score), , drop = FALSE]
  rows <- list()
  if (!factor %in% names(d)) return(NULL)
  for (s in .sf_groups(d, by)) {
    if (all(is.na(s[[factor]]))) next
    u <- .sf_units(s, factor)
    x <- u$score[u$f == levels[1]]
    y <- u$score[u$f == levels[2]]
    if (length(x) < 2 || length(y) < 2) next
    both <- u[u$f %in% levels, , drop = FALSE]
    if (.sf_weighted(both$tw)) {  # survey weights: survey::svyttest, design-based
      both$g <- as.numeric(both$f == levels[1])
      des <- survey::svydesign(ids = ~1, weights = ~tw, data = both)
      r <- survey::svyttest(score ~ g, des)
      row <- data.frame(estimate = unname(r$estimate), std.error = unname(r$estimate / r$statistic),
                        statistic = unname(r$statistic), df = unname(r$parameter), p.value = r$p.value,
                        conf.low = r$conf.int[1], conf.high = r$conf.int[2], n = nrow(both))
    } else {
      row <- .sf_t(mean(x) - mean(y), length(x) + length(y), function() stats::t.test(x, y))
    }
    # Lakens' (2013) d_av: the difference over the mean of the two standard deviations (effectsize has
    # no d_av); NA where no test was made
    sdav <- (stats::sd(x) + stats::sd(y)) / 2
    row$effect_size <- if (is.finite(row$statistic) && sdav > 0) row$estimate / sdav else NA_real_
    rows[[length(rows) + 1]] <- cbind(.sf_key_cols(s, by), contrast = paste0(factor, ": ", levels[1], " - ", levels[2]),
                                      row, stringsAsFactors = FALSE)
  }
  do.call(rbind, rows)
}

# Paired t-test over subjects of the mean score at levels[1] minus levels[2] (each subject's mean over its
# trials at each level), with d_z = mean difference / sd of the differences; survey weights (a subject's
# mean weight): survey::svyttest of the differences, design-based
sf_paired <- function(responses, options, factor, levels, by = "item") {
  d <- .sf_trial_scores(responses, options)
  d <- d[!is.na(d$score), , drop = FALSE]
  rows <- list()
  if (!factor %in% names(d)) return(NULL)
  for (s in .sf_groups(d, by)) {
    if (all(is.na(s[[factor]]))) next
    u <- .sf_units(s, factor)
    x <- stats::setNames(u$score[u$f == levels[1]], u$subject[u$f == levels[1]])
    y <- stats::setNames(u$score[u$f == levels[2]], u$subject[u$f == levels[2]])
    both <- intersect(names(x), names(y))
    if (length(both) < 2) next
    diff <- unname(x[both] - y[both])
    w <- as.numeric(tapply(u$tw, u$subject, mean)[both])
    if (.sf_weighted(w)) {
      des <- survey::svydesign(ids = ~1, weights = ~w, data = data.frame(diff = diff, w = w))
      r <- survey::svyttest(diff ~ 0, des)
      row <- data.frame(estimate = unname(r$estimate), std.error = unname(r$estimate / r$statistic),
                        statistic = unname(r$statistic), df = unname(r$parameter), p.value = r$p.value,
                        conf.low = r$conf.int[1], conf.high = r$conf.int[2], n = length(diff))
    } else {
      row <- .sf_t(mean(diff), length(diff), function() stats::t.test(x[both], y[both], paired = TRUE),
                   df = length(diff) - 1)
    }
    row$effect_size <- if (is.finite(row$statistic) && stats::sd(diff) > 0) row$estimate / stats::sd(diff) else NA_real_
    rows[[length(rows) + 1]] <- cbind(.sf_key_cols(s, by), contrast = paste0(factor, ": ", levels[1], " - ", levels[2]),
                                      row, stringsAsFactors = FALSE)
  }
  do.call(rbind, rows)
}

# Check-all shares and numeric means (`type: summaries`; simsubjects/studyfile/summaries.py): per source x
# model x condition x item, the mean over subjects of each subject's mean value (a check-all box: its
# normalized P(Yes); a number: its answer) and the t interval over subjects; people's check-all rows whose
# values are all 0 or 1 get the Wilson score interval (prop.test without continuity correction; issue 40,
# item 4), numbers keep the t interval. `interval` names each row's. `kinds`: item, answer_kind
sf_summaries <- function(responses, options, kinds) {
  kind <- stats::setNames(as.character(kinds$answer_kind), as.character(kinds$item))[as.character(responses$item)]
  out <- list()
  check <- responses[kind %in% "yesno", , drop = FALSE]
  if (nrow(check)) {
    d <- .sf_shares(check)
    first <- d[!duplicated(d$.trial), , drop = FALSE]
    first$value <- as.numeric(tapply(ifelse(d$response %in% "Yes", d$share, 0), d$.trial, sum)[first$.trial])
    out$selection_shares <- .sf_t_summary(first, shares = TRUE)
  }
  num <- responses[kind %in% "estimate", , drop = FALSE]
  if (nrow(num) && "estimate" %in% names(num)) {
    num <- num[!duplicated(.sf_id(num, .sf_key(num))), , drop = FALSE]
    num$value <- suppressWarnings(as.numeric(num$estimate))
    out$numeric_means <- .sf_t_summary(num)
  }
  Filter(function(x) !is.null(x) && nrow(x) > 0, out)
}

.sf_t_summary <- function(d, shares = FALSE) {
  keys <- c("source", "model", "condition", "item")
  for (k in keys) if (!k %in% names(d)) d[[k]] <- NA_character_
  per <- stats::aggregate(d$value, by = lapply(d[c(keys, "subject")], function(v) ifelse(is.na(v), "\r", as.character(v))),
                          FUN = mean)
  rows <- lapply(split(per, .sf_id(per, keys)), function(g) {
    x <- g$x[!is.na(g$x)]
    n <- length(x)
    if (!n) return(NULL)
    se <- if (n > 1) stats::sd(x) / sqrt(n) else NA_real_
    q <- if (n > 1) stats::qt(0.975, n - 1) else NA_real_
    ci <- c(mean(x) - q * se, mean(x) + q * se)
    interval <- "t over subjects"
    if (shares && g$source[1] == "human" && all(x %in% c(0, 1))) {
      # the Wilson score interval; prop.test warns that its chi-square is approximate at small counts
      ci <- suppressWarnings(stats::prop.test(sum(x), n, correct = FALSE))$conf.int
      interval <- "wilson"
    }
    cbind(g[1, keys, drop = FALSE], estimate = mean(x), std.error = se, conf.low = ci[1],
          conf.high = ci[2], n = n, interval = interval, stringsAsFactors = FALSE)
  })
  out <- do.call(rbind, Filter(Negate(is.null), rows))
  if (!is.null(out)) for (k in keys) out[[k]][out[[k]] == "\r"] <- NA_character_
  out
}

sf_one_sample <- function(responses, options, mu = 0, by = "item") {
  d <- .sf_trial_scores(responses, options)
  d <- d[!is.na(d$score), , drop = FALSE]
  rows <- list()
  for (s in .sf_groups(d, by)) {
    ref <- if (is.character(mu)) suppressWarnings(as.numeric(s[[mu]])) else as.numeric(mu)
    s$score <- s$score - ref
    s <- s[!is.na(s$score), , drop = FALSE]
    if (!nrow(s)) next
    u <- .sf_units(s)
    x <- u$score
    if (length(x) < 2) next
    if (.sf_weighted(u$tw)) {
      des <- survey::svydesign(ids = ~1, weights = ~tw, data = u)
      r <- survey::svyttest(score ~ 0, des)
      row <- data.frame(estimate = unname(r$estimate), std.error = unname(r$estimate / r$statistic),
                        statistic = unname(r$statistic), df = unname(r$parameter), p.value = r$p.value,
                        conf.low = r$conf.int[1], conf.high = r$conf.int[2], n = length(x))
    } else {
      row <- .sf_t(mean(x), length(x), function() stats::t.test(x), df = length(x) - 1)
    }
    row$effect_size <- if (is.finite(row$statistic) && stats::sd(x) > 0) row$estimate / stats::sd(x) else NA_real_
    rows[[length(rows) + 1]] <- cbind(.sf_key_cols(s, by), row, stringsAsFactors = FALSE)
  }
  do.call(rbind, rows)
}

# A model's chi-square p-value: Pearson's statistic on the subjects' probability vectors referred to its
# permutation distribution (levels reshuffled over subjects, each vector kept whole), (b + 1)/(R + 1), as
# simsubjects/analyze/methods/contingency.py's monte_carlo_p; R's own random stream (set.seed(seed)), so
# it agrees with Python's to Monte-Carlo error only (issue 40, item 3)
.sf_permuted_p <- function(share, subject, f, response, R = 1999, seed = 0) {
  u <- tapply(share, list(subject, as.character(response)), sum)
  u[is.na(u)] <- 0
  lv <- f[match(rownames(u), subject)]
  stat <- function(labels) {
    tab <- rowsum(u, labels)
    tab <- tab[, colSums(tab) > 0, drop = FALSE]
    e <- outer(rowSums(tab), colSums(tab)) / sum(tab)
    sum((tab - e)^2 / e)
  }
  observed <- stat(lv)
  set.seed(seed)
  hits <- sum(replicate(R, stat(sample(lv)) >= observed - 1e-9))
  (1 + hits) / (1 + R)
}

# Level x response, each subject counted once (its shares averaged over its trials); survey weights
# rescaled to Kish's effective n; Cramér's V. People: Pearson chi-square's p-value; a model's rows: the
# permutation p-value over subjects (.sf_permuted_p). p.value.asymptotic: chisq.test's p on every row.
sf_chi_square <- function(responses, options, factor, by = "item") {
  tr <- .sf_trial_scores(responses, options)
  d <- .sf_shares(responses)
  d$tw <- tr$tw[match(d$.trial, tr$.trial)]
  rows <- list()
  if (!factor %in% names(d)) return(NULL)
  for (s in .sf_groups(d, by)) {
    if (all(is.na(s[[factor]]))) next
    if ("response_type" %in% names(s) && all(s$response_type %in% "estimate")) next  # numbers: not categories
    f <- as.character(s[[factor]])
    per_unit <- stats::ave(s$.trial, s$subject, f, FUN = function(v) length(unique(v)))
    w <- tapply(s$tw, s$subject, mean)
    share <- s$share
    if (.sf_weighted(as.numeric(w))) {
      n_eff <- sum(w)^2 / sum(w^2)
      share <- share * s$tw * n_eff / sum(w)
    }
    share <- share / as.numeric(per_unit)
    tab <- tapply(share, list(f, as.character(s$response)), sum)
    tab[is.na(tab)] <- 0
    tab <- tab[rowSums(tab) > 0, colSums(tab) > 0, drop = FALSE]
    if (min(dim(tab)) < 2) next
    r <- suppressWarnings(stats::chisq.test(tab, correct = FALSE))
    model <- s$source[1] != "human" && !.sf_weighted(as.numeric(w))
    p <- if (model) .sf_permuted_p(share, as.character(s$subject), f, s$response) else r$p.value
    rows[[length(rows) + 1]] <- cbind(.sf_key_cols(s, by), statistic = unname(r$statistic),
                                      df = unname(r$parameter), p.value = p, p.value.asymptotic = r$p.value,
                                      p.value.mc_se = if (model) sqrt(p * (1 - p) / 1999) else NA_real_,
                                      effect_size = sqrt(unname(r$statistic) / (sum(tab) * (min(dim(tab)) - 1))),
                                      n = length(unique(s$subject)), stringsAsFactors = FALSE)
  }
  do.call(rbind, rows)
}

# AMCE: estimatr::lm_robust of the trial score on the factors, CR2 clustered by subject (survey::svyglm
# with ids = ~subject for people with survey weights); each factor's baseline is the study file's
# declared first level (`baselines`, aligned with `factors`), the other levels in code-point order
# (as the Python side's baseline_order); without `baselines`, the first in code-point order
sf_amce <- function(responses, options, factors, baselines = NULL) {
  d <- .sf_trial_scores(responses, options)
  d <- d[!is.na(d$score), , drop = FALSE]
  rows <- list()
  if (!all(factors %in% names(d))) return(NULL)
  for (s in .sf_groups(d, character(0))) {
    s <- s[stats::complete.cases(s[factors]), , drop = FALSE]
    if (nrow(s) < 3) next
    for (i in seq_along(factors)) {
      f <- factors[i]
      lev <- sort(unique(as.character(s[[f]])), method = "radix")
      b <- if (is.null(baselines)) character(0) else intersect(as.character(baselines[i]), lev)
      s[[f]] <- factor(as.character(s[[f]]), levels = c(b, setdiff(lev, b)))
    }
    use <- factors[vapply(factors, function(f) nlevels(s[[f]]) > 1, logical(1))]
    if (!length(use)) next
    fo <- stats::reformulate(use, "score")
    if (.sf_weighted(s$tw)) {  # people with survey weights: svyglm, linearization clustered by subject
      des <- survey::svydesign(ids = ~subject, weights = ~tw, data = s)
      fit <- survey::svyglm(fo, design = des)
      cs <- summary(fit)$coefficients
      df <- survey::degf(des) + 1 - length(stats::coef(fit))
      q <- stats::qt(0.975, df)
      m <- list(coefficients = cs[, 1], std.error = cs[, 2], statistic = cs[, 3], p.value = cs[, 4],
                df = stats::setNames(rep(df, nrow(cs)), rownames(cs)), conf.low = cs[, 1] - q * cs[, 2],
                conf.high = cs[, 1] + q * cs[, 2])
    } else {
      m <- estimatr::lm_robust(fo, data = s, clusters = s$subject, se_type = "CR2")
    }
    for (f in use) for (lev in levels(s[[f]])[-1]) {
      k <- paste0(f, lev)
      rows[[length(rows) + 1]] <- data.frame(source = s$source[1], model = s$model[1], term = paste0(f, "_", lev),
                                             estimate = unname(m$coefficients[k]), std.error = unname(m$std.error[k]),
                                             statistic = unname(m$statistic[k]), df = unname(m$df[k]),
                                             p.value = unname(m$p.value[k]), conf.low = unname(m$conf.low[k]),
                                             conf.high = unname(m$conf.high[k]), n = length(unique(s$subject)),
                                             n_trials = nrow(s), stringsAsFactors = FALSE)
    }
  }
  do.call(rbind, rows)
}

# Each response row's ordinal position, refusal flag and weight `w` (a model trial's share over the
# item's trials, a person's share times the survey weight): the rows both representativeness twins pool
.sf_rep_rows <- function(responses, options, by = character(0)) {
  d <- .sf_shares(responses)
  d$tw <- ifelse(d$source == "human", d$weight, 1)
  j <- match(paste(d$item, d$response, sep = "\r"), paste(options$item, options$response, sep = "\r"))
  d$position <- as.numeric(options$position[j])
  d$refusal <- ifelse(is.na(j), TRUE, as.logical(options$refusal[j]))
  ntr <- stats::ave(as.character(d$trial), .sf_id(d, c("source", "model", "item", by)),
                    FUN = function(v) length(unique(v)))
  d$w <- d$share * d$tw / ifelse(d$source == "human", 1, as.numeric(ntr))
  d$key <- d$item
  d
}

# Representativeness: the model's and the people's distributions over ordinal positions (a model
# trial's shares averaged over its trials, a person's answers weighted by the survey weight), then
# representativeness() of R/representativeness.R
sf_representativeness <- function(responses, options, by = character(0)) {
  d <- .sf_rep_rows(responses, options, by)
  pool <- function(x, cols) {
    g <- .sf_id(x, cols)
    out <- x[!duplicated(g), cols, drop = FALSE]
    out$weight <- as.numeric(tapply(x$w, g, sum)[g[!duplicated(g)]])
    out
  }
  h <- d[d$source == "human", , drop = FALSE]
  m <- d[d$source != "human", , drop = FALSE]
  mcols <- intersect(by, names(m))
  representativeness(pool(m, c("model", mcols, "key", "position", "refusal")),
                     pool(h, c("key", by, "position", "refusal")), by = if (length(by)) by else NULL)
}

# The basic bootstrap columns of one representativeness row (model x group) on the resamples Python drew
# (R cannot reproduce numpy's generator): `idx_m`, `idx_h` are the replicates x units row indices (0-based)
# into `units_m`, `units_h` (subjects, respondents), `half_alpha` the interval's level/2 (Python's double
# bootstrap calibrates it); Rep on each replicate's pooled units and the columns: .rep_basic_boot of
# R/representativeness.R
sf_representativeness_boot <- function(responses, options, model, units_m, idx_m, units_h, idx_h, half_alpha,
                                       by = character(0), group = character(0)) {
  d <- .sf_rep_rows(responses, options, by)
  d <- d[!(d$refusal %in% TRUE) & !is.na(d$position), , drop = FALSE]
  for (i in seq_along(by)) d <- d[as.character(d[[by[i]]]) == group[i], , drop = FALSE]
  h <- d[d$source == "human", , drop = FALSE]
  m <- d[d$source != "human" & d$model == model, , drop = FALSE]
  col <- .rep_columns(h, m)
  um <- .rep_unit_matrix(m$subject, m$key, m$position, m$w, units_m, col)
  uh <- .rep_unit_matrix(h$subject, h$key, h$position, h$w, units_h, col)
  out <- cbind(model = model, .rep_basic_boot(col, colSums(um), colSums(uh), .rep_counts(idx_m, nrow(um)) %*% um,
                                              .rep_counts(idx_h, nrow(uh)) %*% uh, half_alpha),
               stringsAsFactors = FALSE)
  for (i in seq_along(by)) out[[by[i]]] <- group[i]
  out
}

# Agreement: Pearson r of item means, model against people (weighted means for people); with `by`,
# one row per model x group over the items within the group
sf_agreement <- function(responses, options, by = character(0)) {
  d <- .sf_trial_scores(responses, options)
  d <- d[!is.na(d$score), , drop = FALSE]
  h <- d[d$source == "human", , drop = FALSE]
  hg <- .sf_id(h, c(by, "item"))
  hm <- vapply(split(seq_len(nrow(h)), factor(hg, levels = unique(hg))),
               function(i) stats::weighted.mean(h$score[i], h$tw[i]), numeric(1))
  rows <- list()
  m <- d[d$source != "human", , drop = FALSE]
  for (name in sort(unique(as.character(m$model)), method = "radix")) {
    g <- m[m$model == name, , drop = FALSE]
    mm <- tapply(g$score, .sf_id(g, c(by, "item")), mean)
    common <- intersect(names(mm), names(hm))
    x <- as.numeric(mm[common])
    y <- as.numeric(hm[common])
    ok <- !is.na(x) & !is.na(y)
    cell <- sub("\r[^\r]*$", "", common[ok])  # the group part of the key (all of it but the item)
    if (!length(by)) cell <- rep("", sum(ok))
    for (k in sort(unique(cell), method = "radix")) {
      xi <- x[ok][cell == k]
      yi <- y[ok][cell == k]
      r <- if (length(xi) >= 3) stats::cor.test(xi, yi) else list(estimate = NA_real_, p.value = NA_real_)
      row <- data.frame(model = name, estimate = unname(r$estimate), p.value = r$p.value, n = length(xi),
                        mean_abs_difference = mean(abs(xi - yi)), stringsAsFactors = FALSE)
      if (length(by)) row <- cbind(row, stats::setNames(as.data.frame(as.list(strsplit(k, "\r")[[1]]),
                                                                      stringsAsFactors = FALSE), by))
      rows[[length(rows) + 1]] <- row
    }
  }
  do.call(rbind, rows)
}

# Response shares by item x condition (trial-weighted means of per-trial shares), and the estimates'
# mean, median, sd and quartiles (quantile type 7)
sf_distribution <- function(responses, options) {
  tr <- .sf_trial_scores(responses, options)
  d <- .sf_shares(responses)
  d$tw <- tr$tw[match(d$.trial, tr$.trial)]
  keys <- c("source", "model", "item", "condition")
  type <- if ("response_type" %in% names(d)) as.character(d$response_type) else rep("choice", nrow(d))
  ch <- d[!(type %in% "estimate"), , drop = FALSE]
  out <- list()
  if (nrow(ch)) {
    g <- .sf_id(ch, c(keys, "response"))
    first <- !duplicated(g)
    s <- ch[first, c(keys, "response"), drop = FALSE]
    s$num <- as.numeric(tapply(ch$share * ch$tw, g, sum)[g[first]])
    tk <- .sf_id(tr, keys)
    s$share <- s$num / as.numeric(tapply(tr$tw, tk, sum)[.sf_id(s, keys)])
    s$validity <- as.numeric(tapply(tr$validity, tk, mean)[.sf_id(s, keys)])
    s$n <- as.numeric(table(tk)[.sf_id(s, keys)])
    s$num <- NULL
    out$distribution <- s
  }
  ttype <- if ("response_type" %in% names(tr)) as.character(tr$response_type) else rep("", nrow(tr))
  est <- tr[ttype %in% "estimate", , drop = FALSE]
  if (nrow(est)) {
    g <- .sf_id(est, keys)
    out$estimates <- do.call(rbind, lapply(split(est, factor(g, levels = unique(g))), function(e) {
      x <- e$score[!is.na(e$score)]
      q <- if (length(x)) stats::quantile(x, c(0.25, 0.75), type = 7, names = FALSE) else c(NA_real_, NA_real_)
      data.frame(e[1, keys, drop = FALSE], mean = if (length(x)) mean(x) else NA_real_,
                 median = if (length(x)) stats::median(x) else NA_real_,
                 sd = if (length(x) > 1) stats::sd(x) else NA_real_, q25 = q[1], q75 = q[2],
                 validity = mean(e$validity), n = nrow(e), n_valid = length(x), stringsAsFactors = FALSE)
    }))
  }
  out
}

# Order effects among the substantive options: P(shown first) - P(shown last) per model x item x
# option with the subject as the unit (paired within subject when every subject saw both, else
# Welch), and the mean over items (one-sample t of the item means); `n_ordered` per item: the
# options whose order varies (a refusal stays last)
sf_order_effects <- function(responses, n_ordered) {
  d <- responses[responses$source != "human" & !is.na(responses$shown_position), , drop = FALSE]
  if (!nrow(d)) return(NULL)
  d <- .sf_shares(d)
  last <- as.numeric(n_ordered$n_ordered[match(d$item, n_ordered$item)])
  d$first <- d$shown_position == 1
  d$last <- d$shown_position == last
  g <- .sf_id(d, c("model", "item", "response"))
  rows <- list()
  for (k in unique(g)) {
    s <- d[g == k, , drop = FALSE]
    if (!any(s$first) || !any(s$last)) next
    f <- tapply(s$share[s$first], s$subject[s$first], mean)
    l <- tapply(s$share[s$last], s$subject[s$last], mean)
    f <- f[unique(as.character(s$subject[s$first]))]
    if (length(f) >= 2 && setequal(names(f), names(l))) {
      r <- one_sample_test(f - l[names(f)])
    } else {
      r <- welch_test(f, l)
    }
    rows[[length(rows) + 1]] <- data.frame(model = s$model[1], item = s$item[1], response = s$response[1],
                                           p_first = mean(f), p_last = mean(l), estimate = r$estimate,
                                           std.error = r$std.error, statistic = r$statistic, df = r$df,
                                           p.value = r$p.value, conf.low = r$conf.low, conf.high = r$conf.high,
                                           n_first = length(f), n_last = length(l), stringsAsFactors = FALSE)
  }
  per_item <- do.call(rbind, rows)
  if (is.null(per_item)) return(NULL)
  avg <- do.call(rbind, lapply(split(per_item, per_item$model), function(p) {
    im <- tapply(p$estimate, factor(p$item, levels = unique(p$item)), mean)
    cbind(model = p$model[1], one_sample_test(as.numeric(im))[, c("estimate", "std.error", "statistic", "df",
                                                                   "p.value", "conf.low", "conf.high", "n")],
          stringsAsFactors = FALSE)
  }))
  list(per_item = per_item, average = avg)
}

.sf_keys <- function(d, keys) if (is.null(d)) NULL else .keys(d, keys)

# rbind of data frames whose columns differ (a test table holds welch, one_sample and chi_square rows)
.sf_bind <- function(parts) {
  parts <- Filter(function(x) !is.null(x) && nrow(x) > 0, parts)
  if (!length(parts)) return(NULL)
  cols <- unique(unlist(lapply(parts, names)))
  # a value column only where every part has it (Cohen's d of a t-test is no column of a chi-square row);
  # key columns (text) from any part, NA where a part has none
  num <- unlist(lapply(parts, function(p) names(p)[vapply(p, is.numeric, TRUE)]))
  cols <- cols[!cols %in% num | vapply(cols, function(c) all(vapply(parts, function(p) c %in% names(p), TRUE)), TRUE)]
  do.call(rbind, lapply(parts, function(p) {
    for (c in setdiff(cols, names(p))) p[[c]] <- NA
    p[cols]
  }))
}

#' A study file's analyses, recomputed in R on a replication's exported data
#'
#' The R side of \samp{simsubjects replicate STUDY.yaml}: every analysis of the study file that has an R
#' twin (\samp{distribution}, \samp{welch}, \samp{one_sample}, \samp{chi_square}, \samp{amce},
#' \samp{representativeness}, \samp{agreement}, and the order effects of randomized option orders),
#' computed from the tidy responses in \file{<folder>/export/} by the functions that
#' \samp{simsubjects analyze RUN --check-r} calls (\file{R/studyfile.R}). The unit is the subject, as in the
#' Python tables: a subject's value is its mean over its trials (option orders, repeated draws).
#' \code{analysis.R} passes the study file's option list and analyses as literals.
#'
#' @template folder
#' @param options a data frame of the study file's options: \code{item}, \code{response}, \code{position}
#'   (the ordinal value; \code{NA} for none), \code{refusal} (logical).
#' @param analyses a list with one list per analysis of the file, in the file's order: \code{type},
#'   \code{name} (the table's name), and as the type needs \code{factor}, \code{levels}, \code{mu},
#'   \code{by}, \code{factors} and \code{baselines} (each factor's declared first level, the AMCE's baseline). Types without a twin here (\samp{summaries},
#'   \samp{function}) are skipped.
#' @examples
#' opts <- data.frame(item = "q", response = c("No", "Yes"), position = c(1, 2), refusal = FALSE)
#' r <- data.frame(source = "model", model = "m", run = "r", trial = rep(1:4, each = 2),
#'                 subject = rep(c("s1", "s2", "s3", "s4"), each = 2), item = "q",
#'                 condition = rep(c("a", "a", "b", "b"), each = 2), response = c("No", "Yes"),
#'                 weight = c(0.2, 0.8, 0.3, 0.7, 0.6, 0.4, 0.9, 0.1), validity = 1)
#' dir <- file.path(tempdir(), "sf_example")
#' dir.create(file.path(dir, "export"), recursive = TRUE, showWarnings = FALSE)
#' saveRDS(r, file.path(dir, "export", "responses.rds"))
#' replicate_study_file(dir, opts, list(list(type = "welch", name = "framing", factor = "condition",
#'                                           levels = c("a", "b"), by = "item")))
#' @export
replicate_study_file <- function(folder, options, analyses) {
  r <- .chr(read_run(folder)$responses)
  if (!"weight" %in% names(r)) r$weight <- 1
  out <- list()
  dist <- sf_distribution(r, options)
  keys <- c("source", "model", "item", "condition")
  if (!is.null(dist$distribution)) out$distribution <- .sf_keys(dist$distribution, c(keys, "response"))
  if (!is.null(dist$estimates)) out$estimates <- .sf_keys(dist$estimates, keys)
  tests <- list()
  test_keys <- c("analysis", "source", "model")
  for (i in seq_along(analyses)) {
    a <- analyses[[i]]
    name <- if (is.null(a$name)) paste0(a$type, "_", i) else a$name
    by <- if (is.null(a$by)) "item" else a$by
    res <- switch(a$type,
                  welch = sf_welch(r, options, a$factor, a$levels, by = by),
                  paired = sf_paired(r, options, a$factor, a$levels, by = by),
                  one_sample = sf_one_sample(r, options, mu = if (is.null(a$mu)) 0 else a$mu, by = by),
                  chi_square = sf_chi_square(r, options, a$factor, by = by),
                  NULL)
    if (a$type %in% c("welch", "paired", "one_sample", "chi_square")) {
      if (is.null(res) || !nrow(res)) next
      k <- c("source", "model", by, if (a$type %in% c("welch", "paired")) "contrast")
      if (a$type == "chi_square") {  # the Python row's estimate is the statistic; its contrast names the table
        res$estimate <- res$statistic
        res$contrast <- paste(a$factor, "x response")
      }
      res$analysis <- name
      # a permutation p-value's Monte-Carlo error on every row (NA: an exact p), so .sf_bind keeps the column
      # that check_results reads (R/check.R)
      if (is.null(res$p.value.mc_se)) res$p.value.mc_se <- NA_real_
      tests[[length(tests) + 1]] <- res
      test_keys <- union(test_keys, k)
      if (!is.null(a$name)) out[[name]] <- .sf_keys(res, k)  # a named test is also its own table, as in Python
    } else if (a$type == "amce") {
      out[[name]] <- .sf_keys(sf_amce(r, options, unlist(a$factors), a$baselines), c("source", "model", "term"))
    } else if (a$type %in% c("representativeness", "agreement")) {
      gby <- if (is.null(a$by)) character(0) else unlist(a$by)
      fn <- if (a$type == "agreement") sf_agreement else sf_representativeness
      out[[name]] <- .sf_keys(fn(r, options, by = gby), c("model", gby))
    }
  }
  if (length(tests)) out$tests <- .sf_keys(.sf_bind(tests), test_keys)
  if ("shown_position" %in% names(r)) {
    subst <- options[!(as.logical(options$refusal) %in% TRUE), , drop = FALSE]
    n_ordered <- data.frame(item = unique(options$item), stringsAsFactors = FALSE)
    n_ordered$n_ordered <- as.numeric(table(factor(subst$item, levels = n_ordered$item)))
    oe <- sf_order_effects(r, n_ordered)
    if (!is.null(oe)) {
      out$order_effects <- .sf_keys(oe$per_item, c("model", "item", "response"))
      out$order_effects_average <- .sf_keys(oe$average, "model")
    }
  }
  Filter(function(x) !is.null(x) && nrow(x) > 0, out)
}
