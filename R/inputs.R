# What every function does first with the data it is given: the same frame whether it came from
# read_run(), readRDS(), haven::read_dta() or haven::read_sav(). haven reads a Stata/SPSS value-labelled
# column as numeric codes with a "labels" attribute (class haven_labelled); compared as text, the codes
# ("0", "1") never equal a response such as "Yes", so every statistic would be silently 0 (issue 29).
# Converting by label here, without depending on haven, keeps the package's Imports as they are.

#' A labelled vector (haven_labelled, or any atomic vector with value labels) as a factor by its labels
#'
#' Levels follow the codes' order, which the export sets to the design's order (baseline first); a
#' value without a label keeps its value as its level, as haven::as_factor(levels = "default") does.
#' @noRd
.labelled_factor <- function(x) {
  labs <- attr(x, "labels", exact = TRUE)
  label <- attr(x, "label", exact = TRUE)
  v <- unclass(x)
  attributes(v) <- NULL
  if (is.character(v)) v[v == ""] <- NA  # Stata/SPSS store missing text as ""
  labs <- labs[order(unname(labs))]
  text <- as.character(v)
  hit <- match(v, unname(labs))
  text[!is.na(hit)] <- names(labs)[hit[!is.na(hit)]]
  extra <- sort(unique(v[is.na(hit) & !is.na(v)]))
  out <- factor(text, levels = unique(c(names(labs), as.character(extra))))
  if (!is.null(label)) attr(out, "label") <- label
  out
}

#' The data frame every function works on: a plain data.frame, labelled columns as factors
#' @noRd
.plain <- function(data, arg = "data") {
  if (!is.data.frame(data)) {
    stop(sprintf("%s: expected a data frame (from read_run(), readRDS() or haven), got %s", arg,
                 class(data)[1]), call. = FALSE)
  }
  data <- as.data.frame(data, stringsAsFactors = FALSE)  # a tibble indexes differently ([, 1] stays a frame)
  for (col in names(data)) {
    x <- data[[col]]
    if (!is.factor(x) && is.atomic(x) && (inherits(x, "haven_labelled") ||
                                          !is.null(attr(x, "labels", exact = TRUE)))) {
      data[[col]] <- .labelled_factor(x)
    }
  }
  data
}

#' Stop when a requested value (a response, a level, a baseline) never occurs in a column
#' @noRd
.must_occur <- function(wanted, x, what, column) {
  seen <- unique(as.character(x[!is.na(x)]))
  missing <- setdiff(as.character(wanted), seen)
  if (length(missing)) {
    shown <- utils::head(sort(seen), 12)
    stop(sprintf("%s: %s never occurs in column %s (it holds %s%s)", what,
                 paste0('"', missing, '"', collapse = ", "), column,
                 paste0('"', shown, '"', collapse = ", "), if (length(seen) > 12) ", ..." else ""),
         call. = FALSE)
  }
  invisible(TRUE)
}

#' Factor columns as character (the functions that group by pasted keys compare text)
#' @noRd
.chr_cols <- function(d) {
  for (col in names(d)) if (is.factor(d[[col]])) d[[col]] <- as.character(d[[col]])
  d
}
