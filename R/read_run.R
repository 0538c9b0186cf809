# Readers of what `simsubjects export` writes, and the one reshaping step every analysis needs.

# pandas writes missing values and empty text both as empty fields; empty text is meaningful
# (condition "" = no condition), so text columns keep "" while numeric blanks become NA. A column
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
      return(if (c %in% numeric_cols) rep(NA_real_, length(x)) else x)
    }
    y
  })
  raw
}

.read_table <- function(dirs, name) {
  for (d in dirs) {
    rds <- file.path(d, paste0(name, ".rds"))
    if (file.exists(rds)) return(readRDS(rds))
    csv <- file.path(d, paste0(name, ".csv"))
    if (file.exists(csv)) return(.read_csv(csv, file.path(d, paste0("codebook_", name, ".csv"))))
  }
  NULL
}

read_run <- function(dir) {
  if (!dir.exists(dir)) stop(sprintf("%s: no such run folder", dir), call. = FALSE)
  dirs <- c(file.path(dir, "export"), dir)
  responses <- .read_table(dirs, "responses")
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
  list(responses = as.data.frame(responses), items = .as_df_or_null(.read_table(dirs, "items")),
       manifest = manifest)
}

.as_df_or_null <- function(x) if (is.null(x)) NULL else as.data.frame(x)

.trial_key <- function(data) intersect(c("source", "model", "trial"), names(data))

prob_of <- function(data, response, keep = NULL) {
  need <- c("trial", "response", "weight")
  miss <- setdiff(need, names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s; expected the tidy responses table",
                                 paste(miss, collapse = ", ")), call. = FALSE)
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
