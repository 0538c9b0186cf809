# The bundled replication folder (inst/extdata, every built-in study on its tiniest design): each
# study's R twin gives the numbers of the Python tables it ships with, from the .rds export, with
# haven's view of the same files (labelled columns) giving the same (issue 29).

folder <- function(study) {
  path <- system.file("extdata", "replication", study, package = "simsubjects")
  if (!nzchar(path)) path <- file.path("..", "..", "inst", "extdata", "replication", study)  # a checkout
  path
}

twins <- list(ultimatum = replicate_ultimatum, garden_path = replicate_garden_path,
              wisdom = replicate_wisdom, milgram = replicate_milgram, milgram_novel = replicate_milgram,
              survey_bias = replicate_survey_bias, moca = replicate_moca,
              opinion_survey = replicate_opinion_survey, conjoint_immigration = replicate_conjoint)

for (study in names(twins)) {
  test_that(sprintf("%s: every R table agrees with the Python table", study), {
    out <- capture.output(ok <- check_results(twins[[study]](folder(study)), folder(study)))
    expect_gt(nrow(ok), 0)
    expect_true(all(ok$ok), info = paste(out, collapse = "\n"))
    expect_true(all(ok$matched == ok$rows))
  })
}

test_that("the check fails on a moved number and on a missing Python table", {
  dir <- file.path(tempdir(), "ultimatum")
  unlink(dir, recursive = TRUE)
  dir.create(file.path(dir, "analysis"), recursive = TRUE)
  res <- replicate_ultimatum(folder("ultimatum"))
  py <- utils::read.csv(file.path(folder("ultimatum"), "analysis", "pairing_tests.csv"), check.names = FALSE)
  py$estimate <- py$estimate + 1e-6
  utils::write.csv(py, file.path(dir, "analysis", "pairing_tests.csv"), row.names = FALSE, na = "")  # as pandas
  out <- capture.output(ok <- check_results(res, dir))
  expect_equal(ok$ok, c(FALSE, FALSE))
  expect_match(out[1], "DIFFERS \\(no .*acceptance_by_offer.csv\\)")
  expect_match(out[2], "ultimatum/pairing_tests .* DIFFERS")
  expect_gt(ok$max_abs_diff[2], 9e-7)
})

test_that("the conjoint's profiles come in design order, the baseline first", {
  p <- read_run(folder("conjoint_immigration"))$profiles
  expect_equal(levels(p$Education)[1], "No Formal")
  expect_equal(levels(p$Job)[1], "Janitor")
  expect_equal(levels(p$CountryOfOrigin)[1], "India")
  expect_equal(levels(p$LanguageSkills)[1], "Fluent English")
  expect_equal(sum(p$source == "HHY 2014 respondents"), 13960)
})
