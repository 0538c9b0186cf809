# AMCE of one attribute: OLS of the outcome on the attribute's levels (baseline left out), standard
# errors clustered by `cluster` (a MoCa story), the same conventions as simsubjects/studies/moca/analysis.py:
#   CR0, stata (CR1: G/(G-1) (N-1)/(N-K) CR0), CR2 (Bell-McCaffrey with estimatr's Satterthwaite
#   df): estimatr::lm_robust, t tests with its df (G - 1 for CR0 and stata);
#   cregg: G/(G-1) CR0, normal reference (df = Inf), as cregg::amce reports through survey::svyglm.

.amce_row <- function(outcome, attribute, level, baseline, se_type, conf.level, n, n_clusters,
                      n_level, n_baseline) {
  data.frame(outcome = outcome, attribute = attribute, term = paste(level, "-", baseline),
             level = level, baseline = baseline, estimate = NA_real_, std.error = NA_real_,
             statistic = NA_real_, df = NA_real_, p.value = NA_real_, conf.low = NA_real_,
             conf.high = NA_real_, se_type = se_type, conf.level = conf.level, n = n,
             n_clusters = n_clusters, n_level = n_level, n_baseline = n_baseline,
             stringsAsFactors = FALSE)
}

#' Average Marginal Component Effect with Cluster-Robust Errors
#'
#' The AMCE of one attribute: OLS of the outcome on indicators of the attribute's levels (the
#' baseline left out), standard errors clustered by \code{cluster}, through
#' \code{estimatr::lm_robust}. The conventions are those of the Python module
#' \samp{simsubjects.studies.moca.analysis}, and the numbers agree with it.
#'
#' @param data a data frame, one row per observation (a vote, or a model's P(Yes) per trial).
#' @param outcome name of the numeric outcome column (e.g. \code{"y"}), or a formula
#'   \code{outcome ~ feature + feature} (cregg's interface): then \code{amce()} is
#'   \code{\link{conjoint_amce}} on every feature at once, and \code{...} goes there.
#' @param attribute name of the attribute column (e.g. \code{"event_normality"}).
#' @param id the cluster column (e.g. \code{"item"}, the story), as a name or \code{~item}.
#' @param se_type \code{"CR2"} (the default, as estimatr's \code{lm_robust} and the Python
#'   \code{amce_ols}), \code{"stata"} (CR1), \code{"CR0"} or \code{"cregg"}; see Details.
#' @param levels levels of the attribute to use (rows with other levels are left out); default all, in factor order or sorted.
#' @param baseline the reference level; default the first of \code{levels} present.
#' @template conf_level
#' @param cluster deprecated name of \code{id}.
#' @param ... with a formula: further arguments of \code{\link{conjoint_amce}} (\code{weights},
#'   \code{se_type}, \code{conf.level}).
#' @details
#' With X the design, e the residuals, G clusters, N observations, K coefficients,
#' M = (X'X)^-1 and the CR0 meat sum_g X_g' e_g e_g' X_g:
#' \describe{
#'   \item{\code{"CR0"}}{V = M meat M; t test with df = G - 1.}
#'   \item{\code{"stata"}}{V = G/(G-1) (N-1)/(N-K) CR0 (CR1, as Stata and statsmodels); df = G - 1.}
#'   \item{\code{"CR2"}}{Bell-McCaffrey bias-reduced errors with estimatr's Satterthwaite df.}
#'   \item{\code{"cregg"}}{V = G/(G-1) CR0 (the linearization of \code{survey::svyglm} that
#'     \code{cregg::amce} uses) with normal inference: \code{df = Inf}, z statistic, normal p-value and
#'     interval.}
#' }
#' For two levels A and B (\code{levels = c(A, B), baseline = B}) the estimate is the difference in
#' mean outcome, A minus B. With fewer than three clusters only the estimate is given; with one level
#' present, none.
#' @return
#' A data frame of class \code{simsubjects_amce} (\code{\link{simsubjects_result}}: print, plot, tidy,
#' glance), one row per non-baseline level: \code{outcome, attribute, term} (\code{"A - B"}),
#' \code{level, baseline, estimate, std.error, statistic, df, p.value, conf.low, conf.high, se_type,
#' conf.level, n, n_clusters, n_level, n_baseline}.
#' @examples
#' set.seed(1)
#' d <- data.frame(story = rep(1:12, each = 5))
#' d$normality <- ifelse(d$story %% 2 == 0, "Abnormal", "Normal")
#' d$y <- rbinom(60, 1, ifelse(d$normality == "Abnormal", 0.7, 0.4))
#' amce(d, "y", "normality", "story", se_type = "CR2", baseline = "Normal")
#' amce(d, "y", "normality", "story", se_type = "cregg", baseline = "Normal")
#' @rdname amce
#' @export
amce <- function(data, outcome, attribute = NULL, id = NULL,
                 se_type = c("CR2", "stata", "CR0", "cregg"), levels = NULL, baseline = NULL,
                 conf.level = 0.95, cluster = NULL, ...) {
  if (inherits(outcome, "formula")) return(conjoint_amce(data, outcome, id = id, ...))
  if (!is.null(cluster)) {
    .deprecated("cluster", "id")
    if (is.null(id)) id <- cluster
  }
  cluster <- .column_arg(id, "id")
  if (is.null(attribute) || is.null(cluster)) {
    stop("amce: give the attribute and the cluster column id (or a formula outcome ~ features)", call. = FALSE)
  }
  se_type <- match.arg(se_type)
  data <- .plain(data)
  miss <- setdiff(c(outcome, attribute, cluster), names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s", paste(miss, collapse = ", ")),
                         call. = FALSE)
  y <- as.numeric(data[[outcome]])
  a <- as.character(data[[attribute]])
  cl <- as.character(data[[cluster]])
  if (is.null(levels)) {
    levels <- if (is.factor(data[[attribute]])) base::levels(data[[attribute]]) else sort(unique(a))
  }
  levels <- as.character(levels)
  keep <- !is.na(y) & !is.na(a) & !is.na(cl) & a %in% levels
  y <- y[keep]
  a <- a[keep]
  cl <- cl[keep]
  present <- levels[levels %in% a]
  if (!length(present)) {
    stop(sprintf("levels: none of %s occurs in column %s", paste0('"', levels, '"', collapse = ", "),
                 attribute), call. = FALSE)
  }
  if (is.null(baseline)) baseline <- present[1]
  if (length(baseline) != 1 || is.na(baseline) || !baseline %in% levels) {
    stop(sprintf("baseline: expected one of the levels (%s)", paste(levels, collapse = ", ")),
         call. = FALSE)
  }
  others <- setdiff(present, baseline)
  n <- length(y)
  G <- length(unique(cl))
  rows <- lapply(others, function(l) {
    .amce_row(outcome, attribute, l, baseline, se_type, conf.level, n, G, sum(a == l),
              sum(a == baseline))
  })
  info <- list(outcome = outcome, unit = cluster, se_type = se_type, conf.level = conf.level, n = n,
               n_clusters = G)
  if (!length(rows)) {
    # one level only: no contrast, as the Python side gives NaN
    return(.result(.amce_row(outcome, attribute, setdiff(levels, baseline)[1], baseline, se_type,
                             conf.level, n, G, 0L, sum(a == baseline)), "simsubjects_amce", info))
  }
  out <- do.call(rbind, rows)
  if (!baseline %in% a) return(.result(out, "simsubjects_amce", info))
  # estimates alone (difference in means) when there are too few stories to cluster on
  out$estimate <- vapply(others, function(l) mean(y[a == l]) - mean(y[a == baseline]), numeric(1))
  if (G < 3) return(.result(out, "simsubjects_amce", info))
  x <- factor(a, levels = c(baseline, others))
  fit <- estimatr::lm_robust(y ~ x, data = data.frame(y = y, x = x), clusters = cl,
                             se_type = if (se_type == "cregg") "CR0" else se_type,
                             alpha = 1 - conf.level)
  j <- paste0("x", others)
  out$estimate <- unname(fit$coefficients[j])
  if (se_type == "cregg") {
    se <- sqrt(diag(fit$vcov)[j] * G / (G - 1))
    q <- stats::qnorm(1 - (1 - conf.level) / 2)
    out$std.error <- unname(se)
    out$statistic <- out$estimate / out$std.error
    out$df <- Inf
    out$p.value <- 2 * stats::pnorm(-abs(out$statistic))
    out$conf.low <- out$estimate - q * out$std.error
    out$conf.high <- out$estimate + q * out$std.error
  } else {
    out$std.error <- unname(fit$std.error[j])
    out$statistic <- unname(fit$statistic[j])
    out$df <- unname(fit$df[j])
    out$p.value <- unname(fit$p.value[j])
    out$conf.low <- unname(fit$conf.low[j])
    out$conf.high <- unname(fit$conf.high[j])
  }
  .result(out, "simsubjects_amce", info)
}
