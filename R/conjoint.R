# Conjoint AMCEs and marginal means with cregg's conventions (Leeper, cregg 0.3.7), built on survey
# and sandwich as cregg is; the R twin of simsubjects/analyze/methods/conjoint.py (agreement to 1e-8 is
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
    lv <- if (is.factor(x)) levels(x) else sort(unique(as.character(x)))
    out[[paste0("F", i)]] <- droplevels(factor(as.character(x), levels = lv))
  }
  out$.id <- if (is.null(id)) seq_len(nrow(d)) else d[[id]]
  out$.w <- if (is.null(weights)) rep(1, nrow(d)) else as.numeric(d[[weights]])
  out
}

#' Coefficients and their clustered variance: survey::svyglm (cregg) or lm + sandwich::vcovCL
#' @noRd
.cj_fit <- function(d, formula, se_type) {
  if (se_type == "cregg") {
    design <- survey::svydesign(ids = ~.id, weights = ~.w, data = d)
    mod <- survey::svyglm(formula, design = design)
    V <- stats::vcov(mod)
  } else {
    mod <- stats::lm(formula, data = d, weights = d$.w)
    # stata: HC1 with G/(G-1), i.e. CR1; CR2: Bell-McCaffrey, sandwich's HC2 by cluster with its
    # default cadjust, which equals estimatr's se_type = "CR2" (checked in tests/test_conjoint.py)
    V <- sandwich::vcovCL(mod, cluster = d$.id, type = if (se_type == "stata") "HC1" else "HC2")
  }
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
#' @export
conjoint_amce <- function(data, outcome, features = NULL, id = NULL, weights = NULL, constraints = NULL,
                          se_type = c("cregg", "stata", "CR2"), conf.level = 0.95, alpha = NULL) {
  se_type <- match.arg(se_type)
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
#' @export
conjoint_mm <- function(data, outcome, features = NULL, id = NULL, weights = NULL,
                        se_type = c("cregg", "stata", "CR2"), conf.level = 0.95, h0 = 0, alpha = NULL) {
  se_type <- match.arg(se_type)
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
