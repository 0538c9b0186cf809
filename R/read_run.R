# Readers of what `simsubjects export` writes, and the one reshaping step every analysis needs.

# pandas writes missing values and empty text both as empty fields; the export writes every absent
# value as missing (issue 29), so a blank field is NA in text and numeric columns alike. A column
# that is blank throughout is text unless the export's codebook says it is numeric.
.read_csv <- function(path, codebook = NULL) {
  raw <- utils::read.csv(path, colClasses = "character", na.strings = character(0),
                         check.names = FALSE, encoding = "UTF-8")
  numeric_cols <- character(0)
  if (!is.null(codebook) && file.exists(codebook)) {
    book <- utils::read.csv(codebook, stringsAsFactors = FALSE)
    numeric_cols <- book$column[grepl("^(int|uint|float|Int|Float)", book$type)]
  }
  raw[] <- lapply(names(raw), function(c) {
    x <- raw[[c]]
    y <- utils::type.convert(x, as.is = TRUE, na.strings = character(0))
    if (is.logical(y) && all(x == "")) {
      return(if (c %in% numeric_cols) rep(NA_real_, length(x)) else rep(NA_character_, length(x)))
    }
    y
  })
  .blank_na(raw)
}

# Missing is NA everywhere (issue 29): empty text, in a character column or as a factor level (an older
# export's "" level for a model row's "no value", Stata's and SPSS's missing string), becomes NA, so
# the model's and the people's absent values read alike.
.blank_na <- function(data) {
  for (c in names(data)) {
    x <- data[[c]]
    if (is.factor(x) && "" %in% levels(x)) {
      lab <- attr(x, "label", exact = TRUE)
      x[!is.na(x) & x == ""] <- NA
      x <- factor(x, levels = setdiff(levels(x), ""))
      if (!is.null(lab)) attr(x, "label") <- lab
      data[[c]] <- x
    } else if (is.character(x) && any(!is.na(x) & x == "")) {
      data[[c]][!is.na(x) & x == ""] <- NA
    }
  }
  data
}

.read_table <- function(dirs, name, format = "auto") {
  if (format %in% c("dta", "sav")) return(.read_haven(dirs, name, format))
  for (d in dirs) {
    book <- file.path(d, paste0("codebook_", name, ".csv"))
    rds <- file.path(d, paste0(name, ".rds"))
    if (file.exists(rds)) return(.attach_labels(.blank_na(readRDS(rds)), book))
    csv <- file.path(d, paste0(name, ".csv"))
    if (file.exists(csv)) return(.attach_labels(.read_csv(csv, book), book))
  }
  NULL
}

# A table of the export read back from Stata or SPSS with haven: value-labelled codes become factors by
# label (.plain), and the codebook's `exported_as` names (Stata's 32-character identifiers) go back to
# the original column names, so the frame is the one the .rds gives.
.read_haven <- function(dirs, name, format) {
  if (!requireNamespace("haven", quietly = TRUE)) {
    stop(sprintf("format = \"%s\" reads with haven, which is not installed", format), call. = FALSE)
  }
  for (d in dirs) {
    path <- file.path(d, paste0(name, ".", format))
    if (!file.exists(path)) next
    data <- .blank_na(.plain(if (format == "dta") haven::read_dta(path) else haven::read_sav(path)))
    book <- file.path(d, paste0("codebook_", name, ".csv"))
    if (file.exists(book)) {
      b <- utils::read.csv(book, colClasses = "character", na.strings = character(0), encoding = "UTF-8")
      back <- stats::setNames(b$column, b$exported_as)
      hit <- names(data) %in% names(back)
      names(data)[hit] <- back[names(data)[hit]]
    }
    return(.attach_labels(data, book))
  }
  NULL
}

# The codebook's variable labels as attr(x, "label") (what haven and RStudio show), for the .csv
# files and for .rds files written without R (pyreadr cannot write attributes); a label the file
# already carries is kept.
.attach_labels <- function(data, codebook) {
  if (!file.exists(codebook)) return(data)
  book <- utils::read.csv(codebook, colClasses = "character", na.strings = character(0),
                          check.names = FALSE, encoding = "UTF-8")
  if (!all(c("column", "label") %in% names(book))) return(data)
  book <- book[book$label != "" & book$column %in% names(data), , drop = FALSE]
  for (i in seq_len(nrow(book))) {
    col <- book$column[[i]]
    if (is.null(attr(data[[col]], "label"))) attr(data[[col]], "label") <- book$label[[i]]
  }
  data
}

#' Read an Exported simsubjects Run
#'
#' Reads the responses and item tables of a run folder as written by
#' \samp{simsubjects export DIR --to rds} (or \samp{--to csv}).
#'
#' @param dir a run folder of \samp{simsubjects collect}.
#' @param format \code{"auto"} (the \file{.rds} files, else the \file{.csv} files), or \code{"dta"} /
#'   \code{"sav"} to read the Stata or SPSS export with \pkg{haven} (value labels become factors in the
#'   design's order, the original column names come back from the codebook). The default is the option
#'   \code{simsubjects.format}, so \code{options(simsubjects.format = "dta")} makes every
#'   \code{replicate_*()} function start from the Stata files.
#' @details
#' Looks for \file{DIR/export/responses.rds}, then \file{DIR/export/responses.csv}, then the same names
#' in \file{DIR} itself; likewise for \file{items}. Text columns with few distinct values are factors
#' in the \file{.rds} files. Missing is \code{NA} everywhere: an absent value (no persona, no
#' condition, an unparsed answer) is \code{NA} in model and human rows alike, in every format (an
#' empty text field or factor level of an older export is read as \code{NA} too).
#' Variable labels (the codebook's \code{label} column: the study's design columns, persona
#' attributes) are attached to the columns as \code{attr(x, "label")}.
#' An error says to run \samp{simsubjects export DIR --to rds} when no responses file is found: R does
#' not read the run's own \file{responses.parquet}.
#' @return
#' A list: \code{responses} (the tidy responses table: one row per observation and response option,
#' with columns \code{study, trial, item, condition, subject, source, model, method, response, weight,
#' validity} and the study's design columns), \code{items} (the item side table, or \code{NULL}),
#' \code{profiles} (a conjoint's profile-level table: one row per profile shown, the model's and the
#' bundled people's, with the outcome \code{chosen} and the attributes as factors, baseline first; else
#' \code{NULL}) and \code{manifest} (the run's \file{manifest.json} as a list when \pkg{jsonlite} is installed, else
#' \code{NULL}).
#' @examples
#' run <- file.path(tempdir(), "run")
#' dir.create(file.path(run, "export"), recursive = TRUE, showWarnings = FALSE)
#' write.csv(data.frame(study = "ultimatum", trial = "t1", item = "offer-05", condition = "",
#'                      source = "model", model = "m", response = c("accept", "reject"),
#'                      weight = c(0.6, 0.3), validity = 0.9, offer = 5),
#'           file.path(run, "export", "responses.csv"), row.names = FALSE)
#' str(read_run(run)$responses)
#' @rdname read_run
#' @export
read_run <- function(dir, format = getOption("simsubjects.format", "auto")) {
  format <- match.arg(format, c("auto", "dta", "sav"))
  if (!dir.exists(dir)) stop(sprintf("%s: no such run folder", dir), call. = FALSE)
  dirs <- c(file.path(dir, "export"), dir)
  responses <- .read_table(dirs, "responses", format)
  if (is.null(responses) && format != "auto") {
    stop(sprintf("%s: no responses.%s in %s; run `simsubjects export %s --to %s` first", dir, format,
                 file.path(dir, "export"), dir, format), call. = FALSE)
  }
  if (is.null(responses)) {
    has_parquet <- file.exists(file.path(dir, "responses.parquet"))
    stop(sprintf(paste0("%s: no responses.rds or responses.csv in %s%s; ",
                        "run `simsubjects export %s --to rds` first"),
                 dir, file.path(dir, "export"),
                 if (has_parquet) " (R does not read the run's responses.parquet)" else "", dir),
         call. = FALSE)
  }
  manifest <- NULL
  mpath <- file.path(dir, "manifest.json")
  if (file.exists(mpath) && requireNamespace("jsonlite", quietly = TRUE)) {
    manifest <- jsonlite::fromJSON(mpath, simplifyVector = FALSE)
  }
  list(responses = as.data.frame(responses), items = .as_df_or_null(.read_table(dirs, "items", format)),
       profiles = .as_df_or_null(.read_table(dirs, "profiles", format)), manifest = manifest)
}

.as_df_or_null <- function(x) if (is.null(x)) NULL else as.data.frame(x)

.trial_key <- function(data) intersect(c("source", "model", "trial"), names(data))

#' Per-Trial Probability of One Response
#'
#' One row per trial: the share of the trial's weight on \code{response}, as the Python
#' \samp{simsubjects.analyze.tidy.prob_of}.
#'
#' @param data tidy responses: columns \code{trial}, \code{response}, \code{weight} and, where present, \code{source} and \code{model} (trials are keyed by source, model and trial).
#' @param response the response option, e.g. \code{"accept"}.
#' @param keep design columns to carry over (taken from the trial's first row).
#' @details
#' Exact rows (probabilities) and counted rows (samples, votes) alike become within-trial shares:
#' weight over the trial's total weight. A trial without the response gets 0.
#' @return
#' A data frame with the trial key, \code{validity} (if present), the \code{keep} columns and
#' \code{p_<response>}.
#' @examples
#' d <- data.frame(trial = c("a", "a", "b", "b"), response = c("accept", "reject"),
#'                 weight = c(0.45, 0.45, 3, 1))
#' prob_of(d, "accept")
#' @rdname prob_of
#' @export
prob_of <- function(data, response, keep = NULL) {
  data <- .plain(data)
  need <- c("trial", "response", "weight")
  miss <- setdiff(need, names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s; expected the tidy responses table",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  if (nrow(data) && !response %in% as.character(data$response)) {
    # a tiny sampled run may never draw an option, but a typo or a coded column gives 0 everywhere
    warning(sprintf("response \"%s\" never occurs in column response (it holds %s); every p_%s is 0",
                    response, paste0('"', utils::head(unique(as.character(data$response)), 8), '"',
                                     collapse = ", "), response), call. = FALSE)
  }
  key <- .trial_key(data)
  id <- do.call(paste, c(lapply(data[key], as.character), sep = "\r"))
  w <- as.numeric(data$weight)
  # exact rows already sum to 1 per trial; counted rows become shares of the trial's total
  total <- stats::ave(w, id, FUN = sum)
  hit <- ifelse(as.character(data$response) == response, w / total, 0)
  p <- tapply(hit, factor(id, levels = unique(id)), sum)
  first <- !duplicated(id)
  cols <- unique(c(key, intersect("validity", names(data)), intersect(keep, names(data))))
  out <- data[first, cols, drop = FALSE]
  for (c in names(out)) if (is.factor(out[[c]])) out[[c]] <- as.character(out[[c]])
  out[[paste0("p_", response)]] <- as.numeric(p[id[first]])
  rownames(out) <- NULL
  out
}
