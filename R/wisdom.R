# Wisdom of Crowds (Aher et al. 2023, section 7, Table 2, Figure 8): per question and model, the
# median and quartiles of the valid estimates (type 7, numpy's linear interpolation), the median
# over the truth, and the share of estimates exactly equal to the truth (hyper-accuracy).

#' Wisdom of Crowds: Median, Quartiles and Hyper-Accuracy per Question
#'
#' Per question and model, over the valid estimates: the median, quartiles and IQR, the median over
#' the true answer, and the share of estimates exactly equal to the truth (Aher et al. 2023, section
#' 7), as the Python \samp{simsubjects.studies.wisdom.analysis.per_question}.
#'
#' @param responses tidy responses of a Wisdom of Crowds run: \code{model, item} and the numeric \code{estimate} (NA when the answer was invalid), or else a numeric \code{response}.
#' @param truth a data frame with \code{item} and \code{truth}, the true answers.
#' @details
#' Quartiles are \code{quantile(type = 7)}, numpy's linear interpolation. \code{n} counts every
#' answer, \code{n_valid} the valid ones the statistics rest on.
#' @return
#' One row per model and question: \code{model, item, truth, n, n_valid, median, q1, q3, iqr,
#' median_norm, share_exact}.
#' @examples
#' d <- data.frame(model = "m", item = "q1", estimate = c(100, 120, 150, NA, 100))
#' wisdom_questions(d, data.frame(item = "q1", truth = 100))
#' @rdname wisdom_questions
#' @export
wisdom_questions <- function(responses, truth) {
  d <- .plain(responses, "responses")
  truth <- .plain(truth, "truth")
  if ("source" %in% names(d)) d <- d[d$source == "model", , drop = FALSE]
  miss <- setdiff(c("model", "item"), names(d))
  if (length(miss)) stop(sprintf("responses: missing column(s) %s; expected a Wisdom of Crowds run",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  if (!all(c("item", "truth") %in% names(truth))) {
    stop("truth: expected a data frame with columns item and truth", call. = FALSE)
  }
  est <- if ("estimate" %in% names(d)) as.numeric(d$estimate) else
    suppressWarnings(as.numeric(as.character(d$response)))
  groups <- unique(d[c("model", "item")])
  rows <- lapply(seq_len(nrow(groups)), function(i) {
    sel <- d$model == groups$model[i] & d$item == groups$item[i]
    x <- est[sel & !is.na(est)]
    t <- as.numeric(truth$truth[match(groups$item[i], truth$item)])
    q <- if (length(x)) stats::quantile(x, c(0.25, 0.5, 0.75), type = 7, names = FALSE) else rep(NA_real_, 3)
    data.frame(model = groups$model[i], item = groups$item[i], truth = t, n = sum(sel),
               n_valid = length(x), median = q[2], q1 = q[1], q3 = q[3], iqr = q[3] - q[1],
               median_norm = q[2] / t, share_exact = if (length(x)) mean(x == t) else NA_real_,
               stringsAsFactors = FALSE)
  })
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}
