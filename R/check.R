# The self-check of a replication folder's analysis.R: every table R computes is set beside the table
# of the same name that Python wrote to <study>/analysis/*.csv, row by row, so that a reviewer sees the
# agreement without Python (issue 29). Rows are matched on the text columns both tables share; every
# shared numeric column is compared. Tolerances are those of `simsubjects analyze --check-r`.

# keys as text that compares equal across languages: numbers by value, text as is
.key_text <- function(x) {
  x <- as.character(x)
  x[is.na(x)] <- ""
  num <- suppressWarnings(as.numeric(x))
  ok <- !is.na(num) & nzchar(x)
  x[ok] <- format(num[ok], digits = 15, trim = TRUE)
  x
}

.is_num <- function(x) is.numeric(x) || is.logical(x) && all(is.na(x))

# the largest |R - Python| of two numeric columns: NA beside NA and equal infinities agree, NA beside a
# number does not (Inf)
.max_diff <- function(r, py) {
  r <- suppressWarnings(as.numeric(r))
  py <- suppressWarnings(as.numeric(py))
  both_na <- is.na(r) & is.na(py)
  same_inf <- !both_na & is.infinite(r) & is.infinite(py) & r == py
  d <- abs(r - py)
  d[both_na | same_inf] <- 0
  d[is.na(d)] <- Inf
  if (length(d)) max(d) else 0
}

#' Compare R Result Tables with the Python Tables of a Study Folder
#'
#' For each table of \code{results}, reads \file{<folder>/analysis/<name>.csv} (the table Python wrote),
#' matches rows on the text columns both share and compares every numeric column both share. Prints
#' one line per table with the largest absolute difference. As \samp{simsubjects analyze --check-r}, a
#' \code{statistic} and its \code{p.value} are compared only where the standard error is not ~0
#' (below 1e-6: a saturated tiny design, whose z is the ratio of two rounding errors).
#'
#' @param results a named list of data frames (a \code{replicate_*()} result); each name is the name
#'   of the Python table, optionally with the study's prefix (\code{"<folder>_"}) removed first. A
#'   table's \code{attr(, "keys")} names the columns that identify its rows; by default the text
#'   columns both tables share.
#' @param folder the study's run folder.
#' @param tol tolerance for estimates, errors, statistics and bounds (1e-8, as \samp{--check-r}).
#' @param tol_p tolerance for \code{p.value} and \code{df} columns (1e-6).
#' @return A data frame, invisibly: \code{table, rows, matched, columns, max_abs_diff, ok}.
#' @examples
#' dir <- file.path(tempdir(), "study")
#' dir.create(file.path(dir, "analysis"), recursive = TRUE, showWarnings = FALSE)
#' py <- data.frame(model = "m", estimate = 0.25, p.value = 0.01)
#' write.csv(py, file.path(dir, "analysis", "tests.csv"), row.names = FALSE)
#' check_results(list(tests = data.frame(model = "m", estimate = 0.25 + 1e-12, p.value = 0.01)), dir)
#' @family replication
#' @export
check_results <- function(results, folder, tol = 1e-8, tol_p = 1e-6) {
  prefix <- paste0(basename(normalizePath(folder, mustWork = FALSE)), "_")
  out <- list()
  for (name in names(results)) {
    r <- .plain(results[[name]], name)
    py_name <- if (startsWith(name, prefix)) substring(name, nchar(prefix) + 1) else name
    path <- file.path(folder, "analysis", paste0(py_name, ".csv"))
    row <- data.frame(table = name, rows = nrow(r), matched = NA_integer_, columns = "",
                      max_abs_diff = NA_real_, ok = FALSE, stringsAsFactors = FALSE)
    if (!file.exists(path)) {
      row$columns <- sprintf("no %s", path)
    } else {
      py <- .read_csv(path)
      keys <- attr(results[[name]], "keys")
      if (is.null(keys)) {
        keys <- intersect(names(r)[!vapply(r, .is_num, TRUE)], names(py)[!vapply(py, .is_num, TRUE)])
      }
      keys <- intersect(keys, intersect(names(r), names(py)))
      vals <- setdiff(intersect(names(r)[vapply(r, .is_num, TRUE)], names(py)[vapply(py, .is_num, TRUE)]), keys)
      rk <- do.call(paste, c(lapply(r[keys], .key_text), sep = "\r"))
      pk <- do.call(paste, c(lapply(py[keys], .key_text), sep = "\r"))
      if (!length(keys)) rk <- pk <- as.character(seq_len(max(nrow(r), nrow(py))))[seq_len(nrow(r))]
      hit <- match(rk, pk)
      row$matched <- sum(!is.na(hit))
      row$columns <- paste(vals, collapse = " ")
      worst <- 0
      ok <- row$matched == nrow(r) && nrow(r) > 0 && !anyDuplicated(pk) && length(vals) > 0
      rr <- r[!is.na(hit), , drop = FALSE]
      pp <- py[hit[!is.na(hit)], , drop = FALSE]
      # as --check-r: a test statistic (its p-value, its effect size) only where the standard error is not ~0; a
      # saturated tiny design has errors of rounding size, whose ratio is noise in both languages
      solid <- if ("std.error" %in% vals) {
        se_r <- suppressWarnings(as.numeric(rr$std.error))
        se_p <- suppressWarnings(as.numeric(pp$std.error))
        !(is.finite(se_r) & abs(se_r) < 1e-6) & !(is.finite(se_p) & abs(se_p) < 1e-6)
      } else rep(TRUE, nrow(rr))
      # issue 40: over copies of one prompt Python reports the exact estimate and no statistic or p-value
      if ("sample" %in% names(pp)) solid <- solid & !(pp$sample %in% "identical prompts")
      for (v in vals) {
        use <- if (v %in% c("statistic", "p.value", "effect_size")) solid else rep(TRUE, nrow(rr))
        if (v == "p.value" && "p.value.mc_se" %in% names(rr)) {
          # a permutation p-value (a model's chi_square): R's random stream is not Python's, so the two agree
          # to Monte-Carlo error only; 4 of its standard errors (R/studyfile.R, .sf_permuted_p)
          se <- suppressWarnings(as.numeric(rr$p.value.mc_se))
          mc <- use & is.finite(se)
          ok <- ok && all(abs(as.numeric(rr$p.value[mc]) - as.numeric(pp$p.value[mc])) <= 4 * se[mc] + tol_p)
          use <- use & !is.finite(se)
        }
        d <- .max_diff(rr[[v]][use], pp[[v]][use])
        worst <- max(worst, d)
        ok <- ok && d <= (if (v %in% c("p.value", "df") || endsWith(v, "p.value")) tol_p else tol)
      }
      row$max_abs_diff <- worst
      row$ok <- ok
    }
    cat(sprintf("check %-44s %5d rows, %5s matched  max |R - Python| = %-9s %s\n",
                paste0(basename(folder), "/", row$table), row$rows,
                format(row$matched), formatC(row$max_abs_diff, format = "g", digits = 3),
                if (row$ok) "agrees" else if (is.na(row$matched)) paste0("DIFFERS (", row$columns, ")")
                else "DIFFERS"))
    out[[name]] <- row
  }
  invisible(.rows(out))
}
