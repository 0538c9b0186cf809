dist <- function(key, weights, positions = seq_along(weights), refusal = rep(FALSE, length(weights)),
                 ...) {
  data.frame(key = key, position = positions, weight = weights, refusal = refusal, ...,
             stringsAsFactors = FALSE)
}

test_that("W1 over the span, by hand", {
  model <- rbind(dist("Q1", c(0.5, 0.5, 0)), dist("Q2", c(1, 0, 0, 0)), dist("Q3", c(0.2, 0.8)))
  human <- rbind(dist("Q1", c(0, 50, 50)), dist("Q2", c(0, 0, 0, 7)), dist("Q3", c(2, 8)))
  d <- wasserstein_by_question(model, human)
  # Q1: CDFs (.5, 1, 1) vs (0, .5, 1): W1 = 1 over span 2; Q2: 3 over 3; Q3: identical
  expect_equal(setNames(d$distance, d$key), c(Q1 = 0.5, Q2 = 1, Q3 = 0))
  r <- representativeness(model, human)
  expect_equal(r$estimate, 1 - 0.5)
  expect_equal(r$std.error, sd(c(0.5, 1, 0)) / sqrt(3))
  expect_equal(r$conf.low, 0.5 - qt(0.975, 2) * sd(c(0.5, 1, 0)) / sqrt(3))
  expect_equal(r$n, 3)
  expect_equal(wasserstein_ordinal(c(1, 2), c(1, 0), c(1, 2), c(0, 1)), 1)
  expect_equal(wasserstein_ordinal(c(1, 3), c(1, 0), c(1, 3), c(0, 1), normalize = FALSE), 2)
  expect_true(is.na(wasserstein_ordinal(2, 1, 2, 1)))
})

test_that("refusals are dropped and the rest renormalized; fractional ordinals", {
  model <- dist("Q", c(0.25, 0.75))
  human <- dist("Q", c(30, 10, 60), positions = c(1, 2, NA), refusal = c(FALSE, FALSE, TRUE))
  expect_equal(wasserstein_by_question(model, human)$distance, 0.5)
  model2 <- dist("Q", c(0.2, 0.6, 0.2), positions = c(1, 2, 3), refusal = c(FALSE, FALSE, TRUE))
  expect_equal(wasserstein_by_question(model2, human)$distance, 0.5)
  # "A mix of both" at 1.5 between 1 and 2: span 1
  m <- dist("Q", c(0, 0, 1), positions = c(1, 2, 1.5))
  h <- dist("Q", c(1, 0, 0), positions = c(1, 2, 1.5))
  expect_equal(wasserstein_by_question(m, h)$distance, 0.5)
})

test_that("groups and models", {
  model <- rbind(dist("Q", c(1, 0, 0), model = "m1"), dist("Q", c(0, 0, 1), model = "m2"))
  human <- rbind(dist("Q", c(1, 0, 0), attribute = "Overall", group = "Overall"),
                 dist("Q", c(1, 0, 0), attribute = "SEX", group = "Male"),
                 dist("Q", c(0, 1, 0), attribute = "SEX", group = "Female"))
  r <- representativeness(model, human, by = c("attribute", "group"))
  est <- setNames(r$estimate, paste(r$model, r$group))
  expect_equal(est[["m1 Male"]], 1)
  expect_equal(est[["m1 Female"]], 0.5)
  expect_equal(est[["m2 Overall"]], 0)
  overall <- representativeness(model, human)
  expect_equal(setNames(overall$estimate, overall$model), c(m1 = 1, m2 = 0))
  # without Overall rows: one attribute's groups pool, several attributes are an error
  sex <- human[human$attribute == "SEX", ]
  expect_equal(representativeness(model, sex)$mean_distance, c(0.25, 0.75))
  age <- transform(sex, attribute = "AGE", group = ifelse(group == "Male", "18-29", "30-49"))
  expect_error(representativeness(model, rbind(sex, age)), "Overall")
  expect_error(wasserstein_by_question(dist("A", 1), dist("B", 1)), "no question key")
})
