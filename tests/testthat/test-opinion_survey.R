test_that("opinion_representativeness averages orderings and weights personas", {
  m <- data.frame(
    source = "model", model = "m", key = "Q",
    trial = c("t1", "t1", "t2", "t2", "p1", "p1", "p2", "p2"),
    subject = c("", "", "", "", "p1", "p1", "p2", "p2"),
    persona_weight = c(1, 1, 1, 1, 3, 3, 1, 1),
    response = rep(c("A", "B"), 4), position = rep(c(1, 2), 4), refusal = FALSE,
    weight = c(0.6, 0.4, 0.2, 0.8, 1, 0, 0, 1), stringsAsFactors = FALSE)
  h <- data.frame(source = "human", model = "people", key = "Q", trial = "h", subject = "",
                  persona_weight = NA, response = c("A", "B", "Refused"), position = c(1, 2, NA),
                  refusal = c(FALSE, FALSE, TRUE), weight = c(3, 1, 9), stringsAsFactors = FALSE)
  h$attribute <- "Overall"; h$group <- "Overall"
  m$attribute <- NA; m$group <- NA
  r <- opinion_representativeness(rbind(m, h))
  # default: mean over the two orderings (0.4, 0.6) vs people (0.75, 0.25) without the refusals
  expect_equal(r$estimate[r$model == "m | default"], 1 - 0.35)
  # personas: (3 * (1, 0) + 1 * (0, 1)) / 4 = (0.75, 0.25), the people's distribution
  expect_equal(r$estimate[r$model == "m | personas"], 1)
})
