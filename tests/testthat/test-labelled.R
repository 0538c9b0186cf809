# Data read with haven from .dta/.sav (value-labelled numeric codes) or saved with saveRDS after haven
# gives every function the numbers of the plain data (issue 29: P(Yes) was 0 for every trial).

skip_if_not_installed("haven")

plain <- local({
  set.seed(3)
  d <- expand.grid(option = c("Yes", "No"), trial = sprintf("t%02d", 1:24), stringsAsFactors = FALSE)
  d$item <- sprintf("s%02d", (as.integer(factor(d$trial)) - 1) %/% 2 + 1)
  d$source <- "model"
  d$model <- "m"
  w <- runif(24)
  d$weight <- ifelse(d$option == "Yes", rep(w, each = 2), 1 - rep(w, each = 2))
  d$response <- d$option
  d$option <- NULL
  d$normality <- ifelse(as.integer(sub("s", "", d$item)) %% 2 == 0, "Abnormal", "Normal")
  d
})

# the export's layout: text with few values as labelled codes, design order (baseline first)
as_labelled <- function(x, levels) {
  haven::labelled(match(x, levels) - 1, stats::setNames(seq_along(levels) - 1, levels))
}
labelled <- plain
labelled$response <- as_labelled(plain$response, c("Yes", "No"))
labelled$normality <- as_labelled(plain$normality, c("Normal", "Abnormal"))

round_trip <- function(data, ext) {
  path <- tempfile(fileext = paste0(".", ext))
  switch(ext, dta = haven::write_dta(data, path), sav = haven::write_sav(data, path),
         rds = saveRDS(haven::as_factor(data), path))
  switch(ext, dta = haven::read_dta(path), sav = haven::read_sav(path), rds = readRDS(path))
}

for (ext in c("dta", "sav", "rds")) {
  test_that(sprintf("prob_of and amce on data read back from .%s equal the plain data's", ext), {
    d <- round_trip(labelled, ext)
    if (ext != "rds") expect_s3_class(d$response, "haven_labelled")
    want <- prob_of(plain, "Yes", keep = c("item", "normality"))
    got <- prob_of(d, "Yes", keep = c("item", "normality"))
    expect_equal(got$p_Yes, want$p_Yes)
    expect_gt(sum(got$p_Yes), 0)
    expect_equal(got$normality, want$normality)
    a_want <- amce(want, "p_Yes", "normality", "item", baseline = "Normal")
    a_got <- amce(got, "p_Yes", "normality", "item", baseline = "Normal")
    expect_equal(a_got$estimate, a_want$estimate)
    expect_equal(a_got$std.error, a_want$std.error)
    # a labelled attribute: its levels come from the labels, the design's baseline first
    lab_tr <- d[!duplicated(d$trial), c("trial", "item", "normality")]
    lab_tr$p_Yes <- got$p_Yes
    a_lab <- amce(lab_tr, "p_Yes", "normality", "item")
    expect_equal(a_lab$baseline, "Normal")
    expect_equal(a_lab$estimate, a_want$estimate)
  })
}

test_that("conjoint_amce and conjoint_mm read labelled features by label, design order kept", {
  set.seed(5)
  n <- 400
  d <- data.frame(id = rep(1:80, each = 5), g = sample(c("Female", "Male"), n, TRUE),
                  e = sample(c("None", "High", "College"), n, TRUE))
  d$y <- rbinom(n, 1, 0.4 + 0.1 * (d$g == "Male") + 0.15 * (d$e == "College"))
  d$g <- factor(d$g, c("Female", "Male"))
  d$e <- factor(d$e, c("None", "High", "College"))
  lab <- d
  lab$g <- as_labelled(as.character(d$g), levels(d$g))
  lab$e <- as_labelled(as.character(d$e), levels(d$e))
  for (ext in c("dta", "sav")) {
    back <- round_trip(lab, ext)
    want <- conjoint_amce(d, "y", c("g", "e"), id = "id")
    got <- conjoint_amce(back, "y", c("g", "e"), id = "id")
    expect_equal(got$level, c("Female", "Male", "None", "High", "College"))
    expect_equal(got$estimate, want$estimate)
    expect_equal(got$std.error, want$std.error)
    expect_equal(conjoint_mm(back, "y", c("g", "e"), id = "id")$estimate,
                 conjoint_mm(d, "y", c("g", "e"), id = "id")$estimate)
  }
})

test_that("a value without a label keeps its value; Stata's empty text is missing", {
  x <- haven::labelled(c(0, 1, 7, NA), c(Yes = 0, No = 1))
  f <- .labelled_factor(x)
  expect_equal(as.character(f), c("Yes", "No", "7", NA))
  expect_equal(levels(f), c("Yes", "No", "7"))
  s <- haven::labelled(c("a", "", "b"), c(Alpha = "a"))
  expect_equal(as.character(.labelled_factor(s)), c("Alpha", NA, "b"))
})

test_that("a response that never occurs warns instead of silently giving 0", {
  coded <- plain
  coded$response <- ifelse(plain$response == "Yes", "1", "0")  # codes read as text, labels lost
  expect_warning(prob_of(coded, "Yes"), 'response "Yes" never occurs in column response')
})
