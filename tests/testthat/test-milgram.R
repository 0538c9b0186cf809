m63 <- data.frame(level = 20:25, count = c(5, 4, 2, 1, 1, 1))  # Milgram (1963), Experiment 1

test_that("share still obeying by level, Milgram 1963", {
  s <- milgram_survival(m63, completed = 26)
  expect_equal(s$level, 0:30)
  expect_equal(s$voltage, 15 * (0:30))
  levels <- rep(c(m63$level, 30), c(m63$count, 26))
  by_hand <- vapply(0:30, function(l) mean(levels >= l), numeric(1))
  expect_equal(s$estimate, by_hand)
  expect_equal(s$estimate[s$level == 30], 0.65)
  expect_equal(s$estimate[s$level == 21], 35 / 40)  # five refused the 315-volt shock
  expect_equal(s$n.event[s$level == 21], 5)
  # no censoring before the end: Greenwood's SE is the binomial one
  expect_equal(s$std.error, sqrt(by_hand * (1 - by_hand) / 40))
  expect_equal(unique(s$n), 40)
  expect_equal(milgram_survival(levels)$estimate, by_hand)
})

test_that("groups and censored records", {
  two <- rbind(cbind(m63, model = "human"), data.frame(level = c(0, 10, 30), count = c(1, 1, 2),
                                                        model = "lm"))
  s <- milgram_survival(two, by = "model")
  lm <- s[s$model == "lm", ]
  expect_equal(lm$estimate[lm$level %in% c(0, 1, 10, 11, 30)], c(1, 0.75, 0.75, 0.5, 0.5))
  # a record that stopped at level 5 without a refusal counts as obeying through 5, then leaves
  cen <- milgram_survival(data.frame(level = c(5, 10, 30), censored = c(TRUE, FALSE, FALSE)))
  expect_equal(cen$estimate[cen$level %in% c(5, 6, 10, 11)], c(1, 1, 1, 0.5))
  # censored as a count of the row's subjects, as in the Python breakoff table: of two subjects at
  # level 5 one was cut short; at level 6 four are at risk and one refused, at 11 three and two
  counted <- milgram_survival(data.frame(level = c(5, 10, 30), count = c(2, 2, 1), censored = c(1, 0, 0)))
  expect_equal(counted$estimate[counted$level %in% c(5, 6, 11)], c(1, 0.75, 0.25))
  expect_equal(counted$n.risk[counted$level %in% c(6, 11)], c(4, 3))
  expect_error(milgram_survival(data.frame(level = 5, count = 1, censored = 2)), "censored")
  expect_error(milgram_survival(data.frame(level = 31)), "0..30")
  expect_error(milgram_survival(data.frame(x = 1)), "level")
})
