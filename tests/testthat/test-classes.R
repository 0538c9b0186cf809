# The R-ecosystem fit of issue 29: cregg's formula interface, one argument convention with deprecated
# aliases, result classes with print/plot/tidy/glance, and cregg's frame layout.

cj_data <- local({
  set.seed(11)
  n <- 480
  d <- data.frame(resp = rep(sprintf("r%03d", 1:96), each = 5),
                  Gender = factor(sample(c("Female", "Male"), n, TRUE), c("Female", "Male")),
                  Education = factor(sample(c("None", "High", "College"), n, TRUE),
                                     c("None", "High", "College")),
                  Job = factor(sample(c("Janitor", "Nurse", "Doctor"), n, TRUE), c("Janitor", "Nurse", "Doctor")))
  d$chosen <- rbinom(n, 1, 0.35 + 0.1 * (d$Gender == "Male") + 0.2 * (d$Education == "College"))
  d
})

test_that("the formula interface equals the string arguments, constraints from A * B", {
  by_name <- conjoint_amce(cj_data, "chosen", c("Gender", "Education", "Job"), id = "resp",
                           constraints = "Education:Job")
  by_formula <- conjoint_amce(cj_data, chosen ~ Gender + Education * Job, id = ~resp)
  expect_equal(tidy(by_formula), tidy(by_name))
  expect_equal(tidy(amce(cj_data, chosen ~ Gender + Education * Job, id = ~resp)), tidy(by_name))
  # the constraint changes the estimates: the formula's * is not ignored
  plain <- conjoint_amce(cj_data, chosen ~ Gender + Education + Job, id = ~resp)
  expect_false(isTRUE(all.equal(plain$estimate, by_formula$estimate)))
  mm <- conjoint_mm(cj_data, chosen ~ Gender + Education, id = ~resp, h0 = 0.5)
  expect_equal(tidy(mm), tidy(conjoint_mm(cj_data, "chosen", c("Gender", "Education"), id = "resp", h0 = 0.5)))
  expect_error(conjoint_amce(cj_data, chosen ~ Gender * Education * Job, id = ~resp), "formula")
  expect_error(conjoint_amce(cj_data, chosen ~ Gender, id = ~resp + Job), "id: expected one column")
})

test_that("deprecated names still work and say so: alpha, cluster", {
  a <- conjoint_amce(cj_data, chosen ~ Gender, id = ~resp, conf.level = 0.9)
  expect_warning(old <- conjoint_amce(cj_data, "chosen", "Gender", id = "resp", alpha = 0.1), "`alpha` is deprecated")
  expect_equal(tidy(old), tidy(a))
  tr <- data.frame(story = rep(1:12, each = 5), f = rep(c("A", "B"), 30), y = rep(c(0.2, 0.5, 0.9), 20))
  new <- amce(tr, "y", "f", id = "story", baseline = "A")
  expect_warning(dep <- amce(tr, "y", "f", cluster = "story", baseline = "A"), "`cluster` is deprecated")
  expect_equal(tidy(dep), tidy(new))
  expect_equal(tidy(amce(tr, "y", "f", ~story, baseline = "A")), tidy(new))
  expect_error(amce(tr, "y", "f", "story", levels = c("C", "D")), 'none of "C", "D" occurs in column f')
})

test_that("classes: print names the unit, tidy is a plain frame, glance one row, plot draws", {
  a <- conjoint_amce(cj_data, chosen ~ Gender + Education, id = ~resp)
  expect_s3_class(a, c("simsubjects_amce", "simsubjects_result", "data.frame"))
  out <- capture.output(print(a))
  expect_match(out[1], "AMCEs of chosen: 5 rows; cregg errors clustered by resp; 95% intervals")
  t <- tidy(a)
  expect_identical(class(t), "data.frame")
  expect_true(all(c("estimate", "std.error", "statistic", "p.value", "conf.low", "conf.high") %in% names(t)))
  g <- glance(a)
  expect_equal(nrow(g), 1)
  expect_equal(g$nobs, nrow(cj_data))
  expect_equal(g$n_clusters, 96)
  expect_equal(g$unit, "resp")
  pdf(NULL)
  on.exit(dev.off())
  p <- plot(a)
  if (requireNamespace("ggplot2", quietly = TRUE)) expect_s3_class(p, "ggplot") else expect_identical(p, a)
  m <- conjoint_mm(cj_data, chosen ~ Gender, id = ~resp, h0 = 0.5)
  expect_s3_class(m, "simsubjects_mm")
  expect_equal(glance(m)$estimand, "mm")
})

test_that("as_cregg gives cregg's columns, classes and level order", {
  a <- as_cregg(conjoint_amce(cj_data, chosen ~ Gender + Education, id = ~resp))
  expect_s3_class(a, "cj_amce")
  expect_named(a, c("outcome", "statistic", "feature", "level", "estimate", "std.error", "z", "p", "lower", "upper"))
  expect_equal(levels(a$level), c("Female", "Male", "None", "High", "College"))
  expect_equal(unique(a$statistic), "amce")
  expect_equal(unique(a$outcome), "chosen")
  expect_equal(a$estimate[a$level == "Female"], 0)  # cregg's baseline row: 0, no error
  expect_true(is.na(a$std.error[a$level == "Female"]))
  m <- as_cregg(conjoint_mm(cj_data, chosen ~ Gender, id = ~resp, h0 = 0.5))
  expect_s3_class(m, "cj_mm")
  expect_equal(m$z, (m$estimate - 0.5) / m$std.error)
  by <- as_cregg(cbind(source = "people", tidy(conjoint_mm(cj_data, chosen ~ Gender, id = ~resp))),
                 outcome = "chosen")
  expect_equal(names(by)[1], "BY")
  expect_error(as_cregg(data.frame(x = 1)), "expected a conjoint_amce")
})
