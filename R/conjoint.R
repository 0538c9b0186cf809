# Conjoint AMCEs and marginal means with cregg's conventions (Leeper, cregg 0.3.7), built on survey
# and sandwich as cregg is; the R twin of simsubjects/analyze/methods/conjoint.py (agreement to 1e-8 is
# checked by `simsubjects analyze DIR --check-r` and tests/test_conjoint.py).

#' Prepare a conjoint table: complete rows, features as factors under safe names F1, F2, ...
#' @noRd
.cj_prepare <- function(data, outcome, features, id, weights) {
  if (!is.data.frame(data)) stop("data: expected a data frame", call. = FALSE)
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
#' @param data a data frame, one row per profile.
#' @param outcome name of the outcome column (1 = chosen, or a rating, or P(profile chosen)).
#' @param features names of the feature columns; factors keep their level order.
#' @param id name of the respondent column to cluster by; NULL: each row its own cluster.
#' @param weights name of a survey-weight column, or NULL.
#' @param constraints restricted pairs as "A:B" strings, e.g. "Education:Job".
#' @param se_type "cregg" (survey::svyglm's linearization), "stata" (CR1) or "CR2".
#' @param alpha 1 - confidence level of the normal interval.
#' @return a data frame: feature, level, estimate, std.error, statistic (z), p.value, conf.low,
#'   conf.high, n; baseline rows have estimate 0 and NA errors.
#' @export
conjoint_amce <- function(data, outcome, features, id = NULL, weights = NULL, constraints = NULL,
                          se_type = c("cregg", "stata", "CR2"), alpha = 0.05) {
  se_type <- match.arg(se_type)
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
  do.call(rbind, rows)
}

#' Marginal means of a conjoint experiment
#'
#' The (weighted) mean outcome at every level of every feature, from
#' \code{svyglm(y ~ 0 + level)} per feature with respondent-clustered errors, as cregg::mm.
#'
#' @inheritParams conjoint_amce
#' @param h0 the value the z statistic tests (0.5: no preference in a two-profile forced choice).
#' @return a data frame: feature, level, estimate, std.error, statistic, p.value, conf.low,
#'   conf.high, n.
#' @export
conjoint_mm <- function(data, outcome, features, id = NULL, weights = NULL,
                        se_type = c("cregg", "stata", "CR2"), alpha = 0.05, h0 = 0) {
  se_type <- match.arg(se_type)
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
  do.call(rbind, rows)
}
