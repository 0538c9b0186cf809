test_that("median, quartiles (type 7) and exact share over valid estimates", {
  d <- data.frame(model = "m", item = c(rep("q1", 6), rep("q2", 2)),
                  estimate = c(100, 120, 150, NA, 100, 90, 5, NA))
  w <- wisdom_questions(d, data.frame(item = c("q1", "q2"), truth = c(100, 4)))
  q1 <- w[w$item == "q1", ]
  expect_equal(q1$n, 6)
  expect_equal(q1$n_valid, 5)
  expect_equal(q1$median, 100)
  # type 7 on 90, 100, 100, 120, 150: positions 2 and 4
  expect_equal(c(q1$q1, q1$q3), c(100, 120))
  expect_equal(q1$iqr, 20)
  expect_equal(q1$share_exact, 2 / 5)
  expect_equal(q1$median_norm, 1)
  expect_equal(w$median_norm[w$item == "q2"], 5 / 4)
})

test_that("estimates read from the response text when there is no estimate column", {
  d <- data.frame(model = "m", item = "q1", response = c("10", "", "30"))
  w <- wisdom_questions(d, data.frame(item = "q1", truth = 20))
  expect_equal(c(w$n, w$n_valid, w$median), c(3, 2, 20))
})
