responses <- data.frame(study = "ultimatum", trial = rep(c("t1", "t2"), each = 2), item = "offer-05",
                        condition = "", source = "model", model = "m",
                        response = c("accept", "reject"), weight = c(0.6, 0.3, 2, 2),
                        validity = c(0.9, 0.9, 1, 1), offer = 5, stringsAsFactors = FALSE)

test_that("reads export/responses.rds first, then csv; empty text is NA (missing is NA everywhere)", {
  run <- file.path(tempfile("run"))
  dir.create(file.path(run, "export"), recursive = TRUE)
  expect_error(read_run(run), "simsubjects export .* --to rds")
  write.csv(responses, file.path(run, "export", "responses.csv"), row.names = FALSE)
  write.csv(data.frame(item = "offer-05", offer = 5), file.path(run, "export", "items.csv"),
            row.names = FALSE)
  r <- read_run(run)
  expect_equal(r$responses$condition, rep(NA_character_, 4))
  expect_equal(r$responses$weight, responses$weight)
  expect_equal(r$items$offer, 5)
  # a column blank throughout: text, unless the codebook says it is numeric
  write.csv(data.frame(column = "condition", type = "float64"),
            file.path(run, "export", "codebook_responses.csv"), row.names = FALSE)
  expect_true(all(is.na(read_run(run)$responses$condition)))
  rds <- responses
  rds$response <- factor(rds$response)
  saveRDS(rds, file.path(run, "export", "responses.rds"))
  expect_true(is.factor(read_run(run)$responses$response))
  # an older export's "" factor level (a model row's "no value") reads as NA, the level dropped
  rds$persona <- factor(c("", "", "Alice", NA))
  attr(rds$persona, "label") <- "Persona"
  saveRDS(rds, file.path(run, "export", "responses.rds"))
  p <- read_run(run)$responses$persona
  expect_equal(levels(p), "Alice")
  expect_equal(sum(is.na(p)), 3)
  expect_equal(attr(p, "label"), "Persona")
  expect_error(read_run(file.path(run, "nope")), "no such run folder")
})

test_that("falls back to responses.csv in the run folder", {
  run <- tempfile("run")
  dir.create(run)
  write.csv(responses, file.path(run, "responses.csv"), row.names = FALSE)
  r <- read_run(run)
  expect_equal(nrow(r$responses), 4)
  expect_null(r$items)
})

test_that("prob_of: within-trial shares of one response", {
  p <- prob_of(responses, "accept", keep = "offer")
  expect_equal(p$trial, c("t1", "t2"))
  expect_equal(p$p_accept, c(0.6 / 0.9, 0.5))
  expect_equal(p$offer, c(5, 5))
  expect_warning(p <- prob_of(responses, "maybe"), 'response "maybe" never occurs in column response')
  expect_equal(p$p_maybe, c(0, 0))
})

test_that("the codebook's variable labels are attached; a label the .rds carries is kept", {
  run <- tempfile("run")
  dir.create(file.path(run, "export"), recursive = TRUE)
  write.csv(responses, file.path(run, "export", "responses.csv"), row.names = FALSE)
  write.csv(data.frame(column = c("offer", "model", "weight"), type = c("int64", "str", "float64"),
                       label = c("Offer (of 10)", "Model", "")),
            file.path(run, "export", "codebook_responses.csv"), row.names = FALSE)
  r <- read_run(run)$responses
  expect_equal(attr(r$offer, "label"), "Offer (of 10)")
  expect_null(attr(r$weight, "label"))  # an empty label is no label
  rds <- responses
  attr(rds$model, "label") <- "Set by R at export"
  saveRDS(rds, file.path(run, "export", "responses.rds"))
  r <- read_run(run)$responses
  expect_equal(attr(r$model, "label"), "Set by R at export")
  expect_equal(attr(r$offer, "label"), "Offer (of 10)")
})
