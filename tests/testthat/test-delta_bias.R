tidy_form <- function(model, bias, pert, key, form, counts, exact = FALSE) {
  w <- unlist(counts)
  if (exact) w <- w / sum(w)
  data.frame(model = model, bias = bias, perturbation = pert, key = key, form = form,
             item = paste(bias, pert, key, form, sep = "/"), response = names(counts),
             weight = as.numeric(w), stringsAsFactors = FALSE)
}

fixture <- function(exact = FALSE) {
  f <- function(...) tidy_form(..., exact = exact)
  rbind(
    # acquiescence: modified A - original A
    f("m", "acquiescence", "", "K1", "original", list(A = 30, B = 20)),
    f("m", "acquiescence", "", "K1", "modified", list(A = 40, B = 10)),
    f("m", "acquiescence", "", "K2", "original", list(A = 25, B = 25)),
    f("m", "acquiescence", "", "K2", "modified", list(A = 20, B = 30)),
    f("m", "acquiescence", "", "K3", "original", list(A = 10, B = 40)),
    f("m", "acquiescence", "", "K3", "modified", list(a = 20, b = 30)),  # lower case labels
    # allow/forbid: original B - forbid A; GAP21Q46_W82 is excluded
    f("m", "allow_forbid", "", "F1", "original", list(A = 30, B = 20)),
    f("m", "allow_forbid", "", "F1", "modified", list(A = 30, B = 20)),
    f("m", "allow_forbid", "", "GAP21Q46_W82", "original", list(A = 0, B = 50)),
    f("m", "allow_forbid", "", "GAP21Q46_W82", "modified", list(A = 0, B = 50)),
    # allow/forbid perturbation: original B - perturbed B
    f("m", "allow_forbid", "key_typo", "F1", "original", list(A = 30, B = 20)),
    f("m", "allow_forbid", "key_typo", "F1", "modified", list(A = 25, B = 25)),
    # odd/even: (B + D) without middle - (B + D) with middle
    f("m", "odd_even", "", "S1", "original", list(A = 10, B = 10, C = 25, D = 5, E = 0)),
    f("m", "odd_even", "", "S1", "modified", list(A = 15, B = 15, D = 10, E = 10)),
    # odd/even perturbation pairs, also the opinion-float delta_p
    f("m", "odd_even", "letter_swap", "S1", "original", list(A = 10, B = 10, C = 25, D = 5, E = 0)),
    f("m", "odd_even", "letter_swap", "S1", "modified", list(A = 10, B = 20, C = 15, D = 5, E = 0)),
    # opinion float: original C - float C
    f("m", "opinion_float", "", "S1", "original", list(A = 10, B = 10, C = 10, D = 10, E = 10)),
    f("m", "opinion_float", "", "S1", "modified", list(A = 10, B = 10, C = 4, D = 10, E = 10, F = 6)),
    # response order (answers mapped back): original A - reversed A
    f("m", "response_order", "", "R1", "original", list(A = 30, B = 15, C = 5)),
    f("m", "response_order", "", "R1", "modified", list(A = 20, B = 15, C = 15))
  )
}

hand <- c("acquiescence||K1" = 20, "acquiescence||K2" = -10, "acquiescence||K3" = 20,
          "allow_forbid||F1" = 40 - 60, "allow_forbid|key_typo|F1" = 40 - 50,
          "response_order||R1" = 60 - 40, "opinion_float||S1" = 20 - 8,
          "odd_even||S1" = 50 - 30, "odd_even|letter_swap|S1" = 50 - 30,
          "opinion_float|letter_swap|S1" = 50 - 30)

test_that("delta per question by hand, counts and probabilities alike", {
  for (exact in c(FALSE, TRUE)) {
    d <- delta_bias(fixture(exact))
    got <- setNames(d$estimate, paste(d$bias, d$perturbation, d$key, sep = "|"))
    expect_setequal(names(got), names(hand))
    expect_equal(got[names(hand)], hand)
  }
  d <- delta_bias(fixture())
  borrowed <- d[d$bias == "opinion_float" & d$perturbation == "letter_swap", ]
  expect_equal(borrowed$pairs_from, "odd_even")
  ac <- d[d$bias == "acquiescence" & d$key == "K1", ]
  expect_equal(c(ac$pct_first, ac$pct_second, ac$n_first), c(80, 60, 50))
  expect_equal(c(ac$first, ac$second), c("modified[A]", "original[A]"))
  expect_equal(unique(d$bias), c("acquiescence", "allow_forbid", "response_order",
                                 "opinion_float", "odd_even"))
})

test_that("design columns come from the item table; rows without a pair are ignored", {
  r <- fixture()
  items <- unique(r[c("item", "key", "bias", "perturbation", "form")])
  human <- data.frame(item = "atp/K1", response = "A", weight = 7, model = "ATP",
                      stringsAsFactors = FALSE)
  joined <- delta_bias(rbind(r[c("item", "response", "weight", "model")], human), items)
  expect_equal(joined, delta_bias(r))
  expect_error(delta_bias(r[c("item", "response", "weight")]), "item table")
  bad <- r
  bad$form[1] <- "reversed"
  expect_error(delta_bias(bad), "form")
})

test_that("delta_tests: one-sample t of the deltas and Welch of the two forms", {
  t <- delta_tests(delta_bias(fixture()))
  one <- t[t$bias == "acquiescence" & t$method == "One Sample t-test", ]
  expect_equal(c(one$estimate, one$std.error, one$statistic, one$df, one$n), c(10, 10, 1, 2, 3))
  w <- t[t$bias == "acquiescence" & t$method == "Welch Two Sample t-test", ]
  x <- c(80, 40, 40)
  y <- c(60, 50, 20)
  expect_equal(w$p.value, t.test(x, y)$p.value)
  # issue 40: Cohen's d of the deltas (mean / sd) and Lakens' d_av of the two forms
  expect_equal(one$effect_size, 10 / (10 * sqrt(3)))
  expect_equal(w$effect_size, (mean(x) - mean(y)) / ((sd(x) + sd(y)) / 2))
  expect_equal(w$setting, "bias")
  af <- t[t$bias == "allow_forbid" & t$setting == "bias", ]
  # one question left after the exclusion: n = 1 for the one-sample test, n1 + n2 = 2 for Welch (issue 40, item 7:
  # n counts the units behind the estimate)
  expect_equal(af$n[af$method == "One Sample t-test"], 1)
  expect_equal(af$n[af$method == "Welch Two Sample t-test"], 2)
  expect_true(all(is.na(af$p.value)))
  expect_equal(nrow(t), 2 * 8)  # 8 settings: 5 biases, 3 perturbation pairs (one borrowed)
})
