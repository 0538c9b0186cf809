# t-tests as one-row tidy data frames, through stats::t.test. Degenerate input (fewer than two
# values, or no spread) gives a row with the estimate and NA inference, as the Python twins do,
# instead of t.test's error.

.num <- function(x) {
  x <- as.numeric(x)
  x[!is.na(x)]
}

#' Welch and One-Sample t-Tests as Tidy Rows
#'
#' \code{welch_test}: Welch's two-sample t-test of mean(x) - mean(y); \code{one_sample_test}:
#' Student's one-sample t-test of mean(x) against \code{mu}. Both through \code{stats::t.test}, as the
#' Python \samp{simsubjects.analyze.stats} functions of the same names.
#'
#' @param x,y numeric vectors; missing values are dropped.
#' @param mu the mean under the null hypothesis.
#' @template conf_level
#' @details
#' With fewer than two values (in either sample) the row has the estimate and \code{NA} inference;
#' with no spread at all the standard error is 0, the interval is the estimate and statistic and
#' p-value are \code{NA} (where \code{t.test} stops with an error).
#' @return
#' A one-row data frame. \code{welch_test}: \code{term, estimate} (mean(x) - mean(y)),
#' \code{estimate1, estimate2, std.error, statistic, df, p.value, conf.low, conf.high, n1, n2,
#' method, alternative, effect_size, effect_size_type} (Lakens' d_av, \code{NA} without a test).
#' \code{one_sample_test}: \code{term, estimate} (mean(x)), \code{std.error,
#' statistic, df, p.value, conf.low, conf.high, mu, n, method, alternative}.
#' @examples
#' welch_test(c(0.2, 0.4, 0.5, 0.3), c(0.1, 0.3, 0.2))
#' one_sample_test(c(20, -10, 20))
#' @rdname t_tests
#' @export
welch_test <- function(x, y, conf.level = 0.95) {
  x <- .num(x)
  y <- .num(y)
  nx <- length(x)
  ny <- length(y)
  m1 <- if (nx) mean(x) else NA_real_
  m2 <- if (ny) mean(y) else NA_real_
  row <- data.frame(term = "mean(x) - mean(y)", estimate = m1 - m2, estimate1 = m1, estimate2 = m2,
                    std.error = NA_real_, statistic = NA_real_, df = NA_real_, p.value = NA_real_,
                    conf.low = NA_real_, conf.high = NA_real_, n1 = nx, n2 = ny,
                    method = "Welch Two Sample t-test", alternative = "two.sided",
                    effect_size = NA_real_, effect_size_type = "cohen_d_av", stringsAsFactors = FALSE)
  if (nx < 2 || ny < 2) return(row)
  if (stats::var(x) + stats::var(y) == 0) {
    row$std.error <- 0
    row$conf.low <- row$conf.high <- row$estimate
    return(row)
  }
  res <- stats::t.test(x, y, var.equal = FALSE, conf.level = conf.level)
  row$std.error <- res$stderr
  row$statistic <- unname(res$statistic)
  row$df <- unname(res$parameter)
  row$p.value <- res$p.value
  row$conf.low <- res$conf.int[1]
  row$conf.high <- res$conf.int[2]
  # Lakens' (2013, eq. 10) d_av: the difference over the mean of the two standard deviations (effectsize
  # has no d_av; its cohens_d(pooled_sd = FALSE) divides by the root mean square of the two instead)
  sdav <- (stats::sd(x) + stats::sd(y)) / 2
  if (sdav > 0) row$effect_size <- row$estimate / sdav
  row
}

#' @rdname t_tests
#' @export
one_sample_test <- function(x, mu = 0, conf.level = 0.95) {
  x <- .num(x)
  n <- length(x)
  row <- data.frame(term = "mean(x)", estimate = if (n) mean(x) else NA_real_, std.error = NA_real_,
                    statistic = NA_real_, df = NA_real_, p.value = NA_real_, conf.low = NA_real_,
                    conf.high = NA_real_, mu = mu, n = n, method = "One Sample t-test",
                    alternative = "two.sided", stringsAsFactors = FALSE)
  if (n < 2) return(row)
  row$df <- n - 1
  if (stats::var(x) == 0) {
    row$std.error <- 0
    row$conf.low <- row$conf.high <- row$estimate
    return(row)
  }
  res <- stats::t.test(x, mu = mu, conf.level = conf.level)
  row$std.error <- res$stderr
  row$statistic <- unname(res$statistic)
  row$p.value <- res$p.value
  row$conf.low <- res$conf.int[1]
  row$conf.high <- res$conf.int[2]
  row
}
