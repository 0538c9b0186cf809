# Conjoint AMCEs and marginal means with cregg's conventions (Leeper, cregg 0.3.7): survey::svyglm's
# variance as cregg computes it, through lm + sandwich (.cj_fit); the R twin of simsubjects/analyze/methods/conjoint.py (agreement to 1e-8 is
# checked by `simsubjects analyze DIR --check-r` and tests/test_conjoint.py).

#' Prepare a conjoint table: complete rows, features as factors under safe names F1, F2, ...
#' @noRd
.cj_prepare <- function(data, outcome, features, id, weights) {
  data <- .plain(data)
  miss <- setdiff(c(outcome, features, id, weights), names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s", paste(miss, collapse = ", ")), call. = FALSE)
  d <- data[unique(c(outcome, features, id, weights))]
  d <- d[stats::complete.cases(d), , drop = FALSE]
  out <- data.frame(y = as.numeric(d[[outcome]]))
  for (i in seq_along(features)) {
    x <- d[[features[i]]]
    # radix: codepoint order whatever the locale, as Python's sorted() (the same baseline both sides)
    lv <- if (is.factor(x)) levels(x) else sort(unique(as.character(x)), method = "radix")
    out[[paste0("F", i)]] <- droplevels(factor(as.character(x), levels = lv))
  }
  out$.id <- if (is.null(id)) seq_len(nrow(d)) else d[[id]]
  out$.w <- if (is.null(weights)) rep(1, nrow(d)) else as.numeric(d[[weights]])
  out
}

#' Coefficients and their clustered variance: lm + sandwich::vcovCL. "cregg" is survey::svyglm(formula,
#' svydesign(ids = ~.id, weights = ~.w))'s linearization variance, which is vcovCL's HC0 with G/(G-1) (survey
#' centres the clusters' score totals, which sum to zero at the fit): the same matrix (tests/testthat/test-amce.R
#' holds the two to each other, weighted and with aliased cells), without survey, whose Matrix import alone
#' costs ~1.5 s of CPU to load in every R process that fits a conjoint
#' @noRd
.cj_fit <- function(d, formula, se_type) {
  mod <- stats::lm(formula, data = d, weights = d$.w)
  # stata: HC1 with G/(G-1), i.e. CR1; CR2: Bell-McCaffrey, sandwich's HC2 by cluster with its
  # default cadjust, which equals estimatr's se_type = "CR2" (checked in tests/test_conjoint.py)
  type <- switch(se_type, cregg = "HC0", stata = "HC1", CR2 = "HC2")
  # clusters as integer codes: vcovCL's rowsum sorts the cluster values, which costs ~3x more on text ids
  # (HHY's); the order of the clusters only reorders a sum
  V <- sandwich::vcovCL(mod, cluster = match(d$.id, unique(d$.id)), type = type)
  list(coef = stats::coef(mod), vcov = V, n = nrow(d))
}

#' @noRd
.cj_row <- function(feature, level, est, variance, n, alpha, h0 = 0) {
  se <- if (is.na(variance)) NA_real_ else sqrt(variance)
  z <- (est - h0) / se
  q <- stats::qnorm(1 - alpha / 2)
  data.frame(feature = feature, level = level, estimate = est, std.error = se, statistic = z,
             p.value = 2 * stats::pnorm(-abs(z)), conf.low = est - q * se, conf.high = est + q * se,
             n = n, stringsAsFactors = FALSE)
}

#' Average marginal component effects of a conjoint experiment
#'
#' One regression of the outcome on every feature (treatment coding, the first level as baseline),
#' as in Hainmueller, Hopkins & Yamamoto (2014) and cregg::cj(estimate = "amce"). Each restricted
#' pair in \code{constraints} adds the pair's interaction; a level's AMCE is then its main effect
#' plus the mean of its estimable interactions (cregg's averaging).
#'
#' @param data a data frame, one row per profile (from \code{read_run()$profiles}, readRDS or haven).
#' @param outcome name of the outcome column (1 = chosen, or a rating, or P(profile chosen)), or a
#'   formula \code{outcome ~ A + B * C} as cregg's: the right side names the features, \code{B * C}
#'   a restricted pair (a constraint).
#' @param features names of the feature columns; factors keep their level order (the export's: the
#'   design's baseline first). Not needed with a formula.
#' @param id the respondent column to cluster by, as a name or \code{~respondent}; NULL: each row
#'   its own cluster.
#' @param weights a survey-weight column (name or \code{~w}), or NULL.
#' @param constraints restricted pairs as "A:B" strings, e.g. "Education:Job".
#' @param se_type "cregg" (survey::svyglm's linearization), "stata" (CR1) or "CR2".
#' @param conf.level confidence level of the normal interval.
#' @param alpha deprecated: \code{conf.level = 1 - alpha}.
#' @param by a grouping column, or NULL: the estimates within each group (rows with a missing group
#'   dropped; a factor's level order, else sorted), stacked with the group in a first column \code{BY},
#'   as cregg's \code{cj(..., by = ~group)} and the Python functions' \code{by=}.
#' @return a data frame of class \code{simsubjects_amce} (\code{\link{simsubjects_result}}; cregg's
#'   frame through \code{\link{as_cregg}}): feature, level, estimate, std.error, statistic (z), p.value,
#'   conf.low, conf.high, n; baseline rows have estimate 0 and NA errors.
#' @examples
#' set.seed(2)
#' d <- data.frame(id = rep(1:60, each = 4), g = sample(c("Female", "Male"), 240, TRUE),
#'                 e = sample(c("None", "High", "College"), 240, TRUE))
#' d$e <- factor(d$e, levels = c("None", "High", "College"))  # the baseline first
#' d$y <- rbinom(240, 1, 0.4 + 0.1 * (d$g == "Male") + 0.2 * (d$e == "College"))
#' conjoint_amce(d, y ~ g + e, id = ~id)
#' conjoint_amce(d, "y", c("g", "e"), id = "id", se_type = "CR2")
#' d$half <- ifelse(d$id <= 30, "first", "second")
#' conjoint_amce(d, y ~ g + e, id = ~id, by = "half")
#' @export
conjoint_amce <- function(data, outcome, features = NULL, id = NULL, weights = NULL, constraints = NULL,
                          se_type = c("cregg", "stata", "CR2"), conf.level = 0.95, alpha = NULL, by = NULL) {
  se_type <- match.arg(se_type)
  if (!is.null(by)) {
    return(.stack_by(conjoint_amce, data, by, outcome = outcome, features = features, id = id,
                     weights = weights, constraints = constraints, se_type = se_type,
                     conf.level = if (is.null(alpha)) conf.level else 1 - alpha))
  }
  if (inherits(outcome, "formula")) {
    f <- .parse_formula(outcome)
    outcome <- f$outcome
    features <- f$features
    constraints <- c(constraints, f$constraints)
  }
  if (!is.null(alpha)) {
    .deprecated("alpha", "conf.level = 1 - alpha")
    conf.level <- 1 - alpha
  }
  alpha <- 1 - conf.level
  id <- .column_arg(id, "id")
  weights <- .column_arg(weights, "weights")
  d <- .cj_prepare(data, outcome, features, id, weights)
  fn <- stats::setNames(paste0("F", seq_along(features)), features)
  pairs <- lapply(strsplit(as.character(constraints), ":", fixed = TRUE), trimws)
  if (length(pairs) && (any(lengths(pairs) != 2) || !all(unlist(pairs) %in% features)))
    stop("constraints: expected \"A:B\" pairs of features", call. = FALSE)
  # a feature shown at one level only (a tiny run) has no contrast: its baseline row, no column
  active <- features[vapply(fn, function(x) nlevels(d[[x]]) > 1, TRUE)]
  pairs <- Filter(function(p) all(p %in% active), pairs)
  inter <- vapply(pairs, function(p) paste0(fn[p[1]], ":", fn[p[2]]), "")
  fit <- .cj_fit(d, stats::reformulate(c(unname(fn[active]), inter), "y"), se_type)
  b <- fit$coef
  rows <- list()
  for (f in features) {
    lv <- levels(d[[fn[f]]])
    rows[[length(rows) + 1]] <- .cj_row(f, lv[1], 0, NA, fit$n, alpha)
    pair <- Filter(function(p) f %in% p, pairs)
    for (l in lv[-1]) {
      terms <- paste0(fn[f], l)
      if (length(pair)) {
        p <- pair[[1]]
        other <- setdiff(p, f)
        olv <- levels(d[[fn[other]]])[-1]
        it <- if (p[1] == f) paste0(fn[f], l, ":", fn[other], olv) else paste0(fn[other], olv, ":", fn[f], l)
        terms <- c(terms, it[it %in% names(b) & !is.na(b[it])])
      }
      if (is.na(b[terms[1]])) {  # the level's main effect is not estimable (aliased): no AMCE
        rows[[length(rows) + 1]] <- .cj_row(f, l, NA_real_, NA, fit$n, alpha)
        next
      }
      w <- c(1, rep(1 / length(terms), length(terms) - 1))
      V <- fit$vcov[terms, terms, drop = FALSE]
      rows[[length(rows) + 1]] <- .cj_row(f, l, sum(w * b[terms]), drop(t(w) %*% V %*% w), fit$n, alpha)
    }
  }
  .result(do.call(rbind, rows), "simsubjects_amce",
          list(outcome = outcome, unit = if (is.null(id)) "row" else id, se_type = se_type,
               conf.level = conf.level, n = fit$n, n_clusters = length(unique(d$.id))))
}

#' The groups of a `by` column: a factor's levels in order, else the sorted values (codepoint order, as
#' Python's sorted()), each present at least once; a missing group is no group
#' @noRd
.by_groups <- function(data, by) {
  if (!is.character(by) || length(by) != 1) stop("by: expected one column name", call. = FALSE)
  if (!by %in% names(data)) stop(sprintf("by: no column %s in data", by), call. = FALSE)
  g <- data[[by]]
  lv <- if (is.factor(g)) levels(g) else sort(unique(as.character(g[!is.na(g)])), method = "radix")
  lv[lv %in% as.character(g[!is.na(g)])]
}

#' `fn` within each group of `by`, stacked under a first column BY (the Python `_stack_by`)
#' @noRd
.stack_by <- function(fn, data, by, ...) {
  data <- .plain(data)
  groups <- .by_groups(data, by)
  if (!length(groups)) stop(sprintf("by: column %s has no values", by), call. = FALSE)
  g <- as.character(data[[by]])
  parts <- lapply(groups, function(k) {
    r <- fn(data[!is.na(g) & g == k, , drop = FALSE], ...)
    info <- .info(r)
    cls <- class(r)[1]
    r <- tidy.simsubjects_result(r)
    list(d = cbind(BY = k, r, stringsAsFactors = FALSE), info = info, cls = cls)
  })
  out <- do.call(rbind, lapply(parts, `[[`, "d"))
  rownames(out) <- NULL
  info <- parts[[1]]$info
  info$by <- by
  info$n <- sum(vapply(parts, function(p) as.numeric(p$info$n), 0))
  info$n_clusters <- sum(vapply(parts, function(p) as.numeric(p$info$n_clusters), 0))
  .result(out, parts[[1]]$cls, info)
}

#' Marginal means of a conjoint experiment
#'
#' The (weighted) mean outcome at every level of every feature, from
#' \code{svyglm(y ~ 0 + level)} per feature with respondent-clustered errors, as cregg::mm.
#'
#' @inheritParams conjoint_amce
#' @param h0 the value the z statistic tests (0.5: no preference in a two-profile forced choice).
#' @return a data frame of class \code{simsubjects_mm} (\code{\link{simsubjects_result}}): feature, level,
#'   estimate, std.error, statistic, p.value, conf.low, conf.high, n.
#' @examples
#' set.seed(2)
#' d <- data.frame(id = rep(1:60, each = 4), g = sample(c("Female", "Male"), 240, TRUE))
#' d$y <- rbinom(240, 1, ifelse(d$g == "Male", 0.55, 0.45))
#' conjoint_mm(d, y ~ g, id = ~id, h0 = 0.5)
#' d$half <- ifelse(d$id <= 30, "first", "second")
#' conjoint_mm(d, y ~ g, id = ~id, h0 = 0.5, by = "half")
#' @export
conjoint_mm <- function(data, outcome, features = NULL, id = NULL, weights = NULL,
                        se_type = c("cregg", "stata", "CR2"), conf.level = 0.95, h0 = 0, alpha = NULL,
                        by = NULL) {
  se_type <- match.arg(se_type)
  if (!is.null(by)) {
    return(.stack_by(conjoint_mm, data, by, outcome = outcome, features = features, id = id, weights = weights,
                     se_type = se_type, conf.level = if (is.null(alpha)) conf.level else 1 - alpha, h0 = h0))
  }
  if (inherits(outcome, "formula")) {
    f <- .parse_formula(outcome)
    outcome <- f$outcome
    features <- c(f$features, unlist(strsplit(f$constraints, ":", fixed = TRUE)))
    features <- unique(features)
  }
  if (!is.null(alpha)) {
    .deprecated("alpha", "conf.level = 1 - alpha")
    conf.level <- 1 - alpha
  }
  alpha <- 1 - conf.level
  id <- .column_arg(id, "id")
  weights <- .column_arg(weights, "weights")
  d <- .cj_prepare(data, outcome, features, id, weights)
  rows <- list()
  for (i in seq_along(features)) {
    fi <- paste0("F", i)
    fit <- .cj_fit(d, stats::as.formula(paste("y ~ 0 +", fi)), se_type)
    for (l in levels(d[[fi]])) {
      k <- paste0(fi, l)
      rows[[length(rows) + 1]] <- .cj_row(features[i], l, unname(fit$coef[k]), fit$vcov[k, k], fit$n, alpha, h0)
    }
  }
  .result(do.call(rbind, rows), "simsubjects_mm",
          list(outcome = outcome, unit = if (is.null(id)) "row" else id, se_type = se_type,
               conf.level = conf.level, n = nrow(d), n_clusters = length(unique(d$.id)), h0 = h0))
}

#' Differences in marginal means between groups, and cregg's omnibus test of a grouping
#'
#' \code{conjoint_mm_diffs()}: each group's marginal means (\code{\link{conjoint_mm}} within the group)
#' minus the first group's, with \eqn{se = \sqrt{se_1^2 + se_0^2}} and a normal interval, as
#' \code{cregg::mm_diffs} (\code{cj(..., estimate = "mm_differences", by = )}); the groups are independent
#' samples of respondents. \code{conjoint_anova()}: cregg's \code{cj_anova}, the F test of
#' \code{y ~ features} against \code{y ~ (features) * by} (OLS, neither clustered nor weighted, as cregg).
#' \code{conjoint_wald()}: the same null (\code{by} changes nothing) as a Wald F with errors clustered by
#' respondent (\code{id} within its group): by default CR2 (\code{estimatr::lm_robust(se_type = "CR2")};
#' computed by \code{clubSandwich::vcovCR} on estimatr's columns where clubSandwich is installed: the same
#' matrix, several times faster; \code{options(simsubjects.clubSandwich = FALSE)} uses estimatr's own)
#' and F on (q, clusters - coefficients) df, as \code{clubSandwich::Wald_test(test = "Naive-Fp")};
#' \code{se_type = "cregg"} is \code{survey::regTermTest(svyglm(y ~ (features) * by,
#' svydesign(ids = ~id)), method = "Wald")}, \code{"stata"} CR1. A respondent answers several tasks, so
#' cregg's F over-rejects true nulls; the replication's \code{anova_model_vs_people} is this test (the
#' Python \samp{cj_anova}). \code{conjoint_amce_diffs()}: each group's AMCEs minus the first group's, the
#' feature x group interactions of one regression \code{y ~ (features) * by} with respondent-clustered
#' errors, as \code{cregg::amce_diffs} (unrestricted designs). The R twins of
#' \samp{simsubjects.analyze.methods.conjoint.mm_diffs}, \samp{amce_diffs}, \samp{cj_anova_cregg}
#' (\code{conjoint_anova()}) and \samp{cj_anova} (\code{conjoint_wald()}).
#'
#' @inheritParams conjoint_amce
#' @param by the grouping column (a factor keeps its level order; the first level is the reference).
#' @param h0 the value the z statistic tests.
#' @return \code{conjoint_mm_diffs()}, \code{conjoint_amce_diffs()}: a data frame: BY (\code{"<group> - <first group>"}), feature,
#'   level, estimate, std.error, statistic, p.value, conf.low, conf.high, n. \code{conjoint_anova()}:
#'   one row: by, statistic (F), df, df.residual, p.value, n. \code{conjoint_wald()}: one row: by, test,
#'   statistic (F), df, df.residual, p.value, n, n_clusters, unit (\code{"respondent (cluster)"}).
#' @examples
#' set.seed(3)
#' d <- data.frame(id = rep(1:80, each = 4), g = sample(c("Female", "Male"), 320, TRUE),
#'                 grp = factor(rep(c("people", "model"), each = 160), c("people", "model")))
#' d$y <- rbinom(320, 1, ifelse(d$g == "Male" & d$grp == "model", 0.7, 0.5))
#' conjoint_mm_diffs(d, y ~ g, by = "grp", id = ~id)
#' conjoint_amce_diffs(d, y ~ g, by = "grp", id = ~id)
#' conjoint_anova(d, y ~ g, by = "grp")
#' conjoint_wald(d, y ~ g, by = "grp", id = "id")
#' @rdname conjoint_diffs
#' @export
conjoint_mm_diffs <- function(data, outcome, features = NULL, by, id = NULL, weights = NULL,
                              se_type = c("cregg", "stata", "CR2"), conf.level = 0.95, h0 = 0) {
  data <- .plain(data)
  groups <- .by_groups(data, by)
  g <- data[[by]]
  if (length(groups) < 2) stop(sprintf("by: column %s needs at least two groups", by), call. = FALSE)
  mms <- lapply(groups, function(k) {
    tidy.simsubjects_result(conjoint_mm(data[as.character(g) %in% k, , drop = FALSE], outcome, features, id = id,
                     weights = weights, se_type = se_type, conf.level = conf.level))
  })
  .mm_diff_rows(mms, groups, conf.level, h0)
}

#' conjoint_mm_diffs from the groups' marginal means (tidy frames, first group first): replicate_conjoint
#' has them already, and an MM of HHY's 13,960 profiles is the slow part
#' @noRd
.mm_diff_rows <- function(mms, groups, conf.level = 0.95, h0 = 0) {
  q <- stats::qnorm(1 - (1 - conf.level) / 2)
  base <- mms[[1]]
  out <- lapply(seq_along(groups)[-1], function(i) {
    cur <- mms[[i]]
    # every level of either group: one seen in only one group has an NA difference (as the Python twin,
    # whose frames align on the union of levels)
    m <- merge(cur, base, by = c("feature", "level"), sort = FALSE, suffixes = c("", ".0"), all = TRUE)
    key <- unique(c(paste(base$feature, base$level, sep = "\r"), paste(cur$feature, cur$level, sep = "\r")))
    m <- m[match(key, paste(m$feature, m$level, sep = "\r")), ]
    est <- m$estimate - m$estimate.0
    se <- sqrt(m$std.error^2 + m$std.error.0^2)
    z <- (est - h0) / se
    data.frame(BY = paste(groups[i], "-", groups[1]), feature = m$feature, level = m$level, estimate = est,
               std.error = se, statistic = z, p.value = 2 * stats::pnorm(-abs(z)), conf.low = est - q * se,
               conf.high = est + q * se, n = m$n + m$n.0, stringsAsFactors = FALSE)
  })
  out <- do.call(rbind, out)
  rownames(out) <- NULL
  out
}

#' @rdname conjoint_diffs
#' @export
conjoint_amce_diffs <- function(data, outcome, features = NULL, by, id = NULL, weights = NULL,
                                se_type = c("cregg", "stata", "CR2"), conf.level = 0.95) {
  se_type <- match.arg(se_type)
  if (inherits(outcome, "formula")) {
    f <- .parse_formula(outcome)
    if (length(f$constraints)) {
      stop("formula: conjoint_amce_diffs() takes unrestricted designs (features joined by +), as cregg's amce_diffs",
           call. = FALSE)
    }
    outcome <- f$outcome
    features <- f$features
  }
  id <- .column_arg(id, "id")
  weights <- .column_arg(weights, "weights")
  data <- .plain(data)
  groups <- .by_groups(data, by)
  data <- data[!is.na(data[[by]]), , drop = FALSE]
  data[[by]] <- factor(as.character(data[[by]]), levels = groups)
  d <- .cj_prepare(data, outcome, c(features, by), id, weights)
  k <- length(features) + 1
  d$.by <- droplevels(d[[paste0("F", k)]])
  groups <- levels(d$.by)
  if (length(groups) < 2) stop(sprintf("by: column %s needs at least two groups", by), call. = FALSE)
  fn <- stats::setNames(paste0("F", seq_along(features)), features)
  active <- unname(fn[vapply(fn, function(x) nlevels(d[[x]]) > 1, TRUE)])
  # cregg's amce_diffs: y ~ (features) * by; each feature level x group interaction is that group's
  # AMCE minus the first group's, errors clustered by respondent in one fit
  fit <- .cj_fit(d, stats::as.formula(paste("y ~ (", paste(active, collapse = " + "), ") * .by")), se_type)
  alpha <- 1 - conf.level
  rows <- list()
  for (gk in groups[-1]) {
    for (f in features) {
      for (l in levels(d[[fn[f]]])[-1]) {
        term <- paste0(fn[f], l, ":.by", gk)
        est <- if (term %in% names(fit$coef)) unname(fit$coef[term]) else NA_real_
        v <- if (!is.na(est)) fit$vcov[term, term] else NA_real_
        rows[[length(rows) + 1]] <- cbind(BY = paste(gk, "-", groups[1]), .cj_row(f, l, est, v, fit$n, alpha),
                                          stringsAsFactors = FALSE)
      }
    }
  }
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}

#' @rdname conjoint_diffs
#' @export
conjoint_anova <- function(data, outcome, features = NULL, by, constraints = NULL) {
  if (inherits(outcome, "formula")) {
    f <- .parse_formula(outcome)
    outcome <- f$outcome
    features <- f$features
    constraints <- c(constraints, f$constraints)
  }
  data <- .plain(data)
  if (!by %in% names(data)) stop(sprintf("by: no column %s in data", by), call. = FALSE)
  d <- .cj_prepare(data[!is.na(data[[by]]), , drop = FALSE], outcome, features, by, NULL)
  d$.by <- droplevels(factor(d$.id))
  if (nlevels(d$.by) < 2) stop(sprintf("by: column %s needs at least two groups", by), call. = FALSE)
  fn <- stats::setNames(paste0("F", seq_along(features)), features)
  pairs <- lapply(strsplit(as.character(constraints), ":", fixed = TRUE), trimws)
  inter <- vapply(pairs, function(p) paste0(fn[p[1]], ":", fn[p[2]]), "")
  terms <- c(unname(fn[vapply(fn, function(x) nlevels(d[[x]]) > 1, TRUE)]), inter)
  red <- stats::lm(stats::reformulate(terms, "y"), data = d)
  full <- stats::lm(stats::as.formula(paste("y ~ (", paste(terms, collapse = " + "), ") * .by")), data = d)
  a <- stats::anova(red, full)
  data.frame(by = by, statistic = a$F[2], df = a$Df[2], df.residual = a$Res.Df[2], p.value = a$`Pr(>F)`[2],
             n = nrow(d), stringsAsFactors = FALSE)
}

#' @rdname conjoint_diffs
#' @export
conjoint_wald <- function(data, outcome, features = NULL, by, id, constraints = NULL, se_type = "CR2") {
  se_type <- match.arg(se_type, c("CR2", "stata", "cregg"))
  if (inherits(outcome, "formula")) {
    f <- .parse_formula(outcome)
    outcome <- f$outcome
    features <- f$features
    constraints <- c(constraints, f$constraints)
  }
  if (inherits(id, "formula")) id <- all.vars(id)
  data <- .plain(data)
  if (!by %in% names(data)) stop(sprintf("by: no column %s in data", by), call. = FALSE)
  data <- data[!is.na(data[[by]]), , drop = FALSE]
  # a respondent is a cluster within its group: ids of the people and of a model never merge
  data$.cl <- paste(data[[by]], data[[id]], sep = "\r")
  d <- .cj_prepare(data, outcome, c(features, by), ".cl", NULL)
  d$.by <- d[[paste0("F", length(features) + 1)]]
  if (nlevels(d$.by) < 2) stop(sprintf("by: column %s needs at least two groups", by), call. = FALSE)
  fn <- stats::setNames(paste0("F", seq_along(features)), features)
  pairs <- lapply(strsplit(as.character(constraints), ":", fixed = TRUE), trimws)
  inter <- vapply(pairs, function(p) paste0(fn[p[1]], ":", fn[p[2]]), "")
  terms <- c(unname(fn[vapply(fn, function(x) nlevels(d[[x]]) > 1, TRUE)]), inter)
  fo <- stats::as.formula(paste("y ~ (", paste(terms, collapse = " + "), ") * .by"))
  if (se_type == "CR2") {
    # Bell-McCaffrey CR2 clustered by respondent, as estimatr::lm_robust(se_type = "CR2"), whose aliased
    # columns it keeps out (they are not lm's: estimatr sorts the rows by cluster before its QR)
    fast <- .fast_cr2()
    full <- estimatr::lm_robust(fo, data = d, clusters = .id, se_type = if (fast) "CR0" else "CR2")
    V <- if (fast) .cr2_vcov(fo, d, full) else stats::vcov(full)
  } else {
    full <- stats::lm(fo, data = d)
    # survey::svyglm(ids = ~respondent)'s linearization variance is vcovCL's HC0 with G / (G - 1)
    # ("cregg"); Stata's CR1 is vcovCL's HC1. lm + sandwich keeps the design's empty restricted cells
    # as aliased (NA) columns, which svyglm + regTermTest would not drop, and gives the same Wald F
    V <- sandwich::vcovCL(full, cluster = d$.id, type = if (se_type == "stata") "HC1" else "HC0", cadjust = TRUE)
  }
  b <- stats::coef(full)
  b <- b[!is.na(b)]
  tested <- grepl(".by", names(b), fixed = TRUE)
  V <- V[names(b)[tested], names(b)[tested], drop = FALSE]
  b <- b[tested]
  e <- eigen(V, symmetric = TRUE)
  keep <- e$values > max(e$values) * max(dim(V)) * .Machine$double.eps
  q <- sum(keep)  # rank of V: the tested directions the data identify
  w <- sum((crossprod(e$vectors[, keep, drop = FALSE], b))^2 / e$values[keep])
  G <- length(unique(d$.id))
  df2 <- G - full$rank
  Fs <- if (q > 0) w / q else NA_real_
  p <- if (q > 0 && df2 > 0) stats::pf(Fs, q, df2, lower.tail = FALSE) else NA_real_
  test <- if (se_type == "CR2") "Wald F, CR2 clustered by respondent, F(q, G - p) (clubSandwich Naive-Fp)" else
    sprintf("Wald F, %s clustered by respondent, F(q, G - p)", se_type)
  data.frame(by = by, test = test, statistic = Fs, df = q,
             df.residual = df2, p.value = p, n = nrow(d), n_clusters = G, unit = "respondent (cluster)",
             stringsAsFactors = FALSE)
}

# estimatr's CR2 takes 17 s on HHY's 13,960 profiles (it works on the whole design for every cluster);
# clubSandwich's vcovCR gives the same matrix (within 1e-14 there) in 2 s, so it is used where installed.
# Both take the generalized inverse square root of I - H_gg (a respondent who alone identifies a
# coefficient counts 0 in that direction); tests/testthat/test-amce.R holds the two to each other.
.fast_cr2 <- function() {
  # suppressMessages: loading it says that it overrides sandwich's bread.mlm, which no code here calls
  isTRUE(getOption("simsubjects.clubSandwich", TRUE)) &&
    suppressMessages(requireNamespace("clubSandwich", quietly = TRUE))
}

# CR2 on the columns estimatr kept in `fit` (a clustered estimatr fit of formula `fo` on `d`)
.cr2_vcov <- function(fo, d, fit) {
  b <- stats::coef(fit)
  X <- stats::model.matrix(fo, d)[, names(b)[!is.na(b)], drop = FALSE]
  y <- d$y
  # the clusters as the integer codes of the factor clubSandwich would make (the same order, so the same
  # matrix to the bit): it compares the cluster with each of its values, ~2x slower on a factor
  cl <- as.integer(factor(d$.id))
  V <- as.matrix(clubSandwich::vcovCR(stats::lm(y ~ 0 + X), cluster = cl, type = "CR2"))
  dimnames(V) <- list(colnames(X), colnames(X))
  V
}
