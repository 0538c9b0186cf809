sentences <- function() {
  d <- expand.grid(item = c("s1", "s2", "s3", "s4"), condition = c("garden_path", "control"),
                   name = c("a", "b"), response = c("ungrammatical", "grammatical"),
                   stringsAsFactors = FALSE)
  d$trial <- paste(d$item, d$condition, d$name)
  d$model <- "m"
  d$set <- "published"
  d$type <- ifelse(d$item %in% c("s1", "s2"), "OT", "RAT")
  p <- c(s1 = 0.8, s2 = 0.6, s3 = 0.55, s4 = 0.2)[d$item] - ifelse(d$condition == "control", 0.3, 0) +
    ifelse(d$name == "a", 0.05, -0.05)
  # exact rows with validity 0.5: the normalized P(ungrammatical) is p
  d$weight <- ifelse(d$response == "ungrammatical", p, 1 - p) / 2
  d
}

test_that("per-sentence means average over names, then GP minus control", {
  s <- garden_path_sentences(sentences())
  expect_equal(s$item, c("s1", "s2", "s3", "s4"))
  expect_equal(s$garden_path, c(0.8, 0.6, 0.55, 0.2))
  expect_equal(s$control, c(0.5, 0.3, 0.25, -0.1))
  expect_equal(s$difference, rep(0.3, 4))
  expect_equal(s$type, c("OT", "OT", "RAT", "RAT"))
})

test_that("paired t-test and Wilcoxon as scipy reports them", {
  s <- data.frame(difference = c(0.3, -0.1, 0.25, 0.4, 0.05))
  t <- garden_path_tests(s)
  expect_equal(t$test, c("Paired t-test", "Wilcoxon signed-rank test"))
  expect_equal(t$n_gp_greater, c(4, 4))
  tt <- t.test(s$difference)
  expect_equal(t$statistic[1], unname(tt$statistic))
  expect_equal(t$p.value[1], tt$p.value)
  # ranks of |d|: 0.05 -> 1, 0.1 -> 2, 0.25 -> 3, 0.3 -> 4, 0.4 -> 5; negative sum 2, positive 13:
  # V, the positive ranks' sum, as R's wilcox.test and methods.paired.wilcoxon report it (issue 40, item 7)
  expect_equal(t$statistic[2], 13)
  expect_equal(t$statistic[2], unname(wilcox.test(s$difference, exact = TRUE)$statistic))
  expect_equal(t$effect_size[1], mean(s$difference) / sd(s$difference))  # Cohen's d_z
  expect_equal(t$p.value[2], wilcox.test(s$difference, exact = TRUE)$p.value)
  one <- garden_path_tests(data.frame(difference = 0.2))
  expect_true(all(is.na(one$p.value)))
})
