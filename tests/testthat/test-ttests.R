test_that("welch_test is Welch's formula", {
  x <- c(0.2, 0.4, 0.5, 0.3, 0.9)
  y <- c(0.1, 0.3, 0.2)
  vx <- var(x) / 5
  vy <- var(y) / 3
  se <- sqrt(vx + vy)
  df <- (vx + vy)^2 / (vx^2 / 4 + vy^2 / 2)
  est <- mean(x) - mean(y)
  w <- welch_test(x, y)
  expect_equal(nrow(w), 1)
  expect_equal(w$estimate, est)
  expect_equal(w$std.error, se)
  expect_equal(w$statistic, est / se)
  expect_equal(w$df, df)
  expect_equal(w$p.value, 2 * pt(-abs(est / se), df))
  expect_equal(c(w$conf.low, w$conf.high), est + c(-1, 1) * qt(0.975, df) * se)
  expect_equal(c(w$n1, w$n2), c(5, 3))
  expect_equal(w$effect_size, est / ((sd(x) + sd(y)) / 2))  # Lakens' d_av
})

test_that("one_sample_test is Student's formula", {
  # the paper's acquiescence deltas of the Python test: mean 10, se 10, t 1, df 2
  o <- one_sample_test(c(20, -10, 20))
  expect_equal(o$estimate, 10)
  expect_equal(o$std.error, 10)
  expect_equal(o$statistic, 1)
  expect_equal(o$df, 2)
  expect_equal(o$p.value, 1 - 1 / sqrt(3))  # t with 2 df: p = 1 - |t| / sqrt(t^2 + 2)
  expect_equal(one_sample_test(c(1, 2, 6), mu = 1)$statistic, (3 - 1) / (sd(c(1, 2, 6)) / sqrt(3)))
})

test_that("degenerate samples give NA inference instead of an error", {
  w <- welch_test(1, c(1, 2))
  expect_equal(w$estimate, -0.5)
  expect_true(is.na(w$p.value))
  c0 <- welch_test(c(2, 2), c(1, 1))
  expect_equal(c(c0$std.error, c0$conf.low, c0$conf.high), c(0, 1, 1))
  expect_true(is.na(c0$statistic) && is.na(c0$effect_size))
  o <- one_sample_test(c(3, 3, 3))
  expect_equal(c(o$estimate, o$std.error, o$df), c(3, 0, 2))
  expect_true(is.na(o$p.value))
  expect_true(is.na(one_sample_test(numeric(0))$estimate))
})
