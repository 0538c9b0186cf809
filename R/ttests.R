# t-tests as one-row tidy data frames, through stats::t.test. Degenerate input (fewer than two
# values, or no spread) gives a row with the estimate and NA inference, as the Python twins do,
# instead of t.test's error.

.num <- function(x) {
  x <- as.numeric(x)
  x[!is.na(x)]
}

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
                    stringsAsFactors = FALSE)
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
  row
}

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
