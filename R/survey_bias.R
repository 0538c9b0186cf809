# Response-bias deltas of Tjuatja et al. (2024), as simsubjects/studies/survey_bias/analysis.py computes them
# (the released BiasMonkey analysis behind the paper's Table 4):
#   delta = 100 * share(first form, first options) - 100 * share(second form, second options)

.bias_order <- c("acquiescence", "allow_forbid", "response_order", "opinion_float", "odd_even")
.perturbation_order <- c("key_typo", "middle_random", "letter_swap")

.rule <- function(first_form, first_options, second_form, second_options) {
  list(first_form = first_form, first_options = first_options, second_form = second_form,
       second_options = second_options)
}

.bias_rules <- list(
  acquiescence = .rule("modified", "A", "original", "A"),
  allow_forbid = .rule("original", "B", "modified", "A"),
  response_order = .rule("original", "A", "modified", "A"),
  opinion_float = .rule("original", "C", "modified", "C"),
  odd_even = .rule("modified", c("B", "D"), "original", c("B", "D"))
)

# perturbation pairs keep their bias's rule, except allow/forbid: B of the original vs B of the
# perturbed original
.perturbation_rules <- .bias_rules
.perturbation_rules$allow_forbid <- .rule("original", "B", "modified", "B")

.design <- c("key", "bias", "perturbation", "form")

.prepare_bias <- function(data, items) {
  data <- .plain(data)
  if (!is.null(items)) items <- .plain(items, "items")
  miss <- setdiff(c("item", "response", "weight"), names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s; expected the tidy responses table",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  for (c in names(data)) if (is.factor(data[[c]])) data[[c]] <- as.character(data[[c]])
  miss <- setdiff(.design, names(data))
  if (length(miss)) {
    if (is.null(items)) stop(sprintf("data: missing column(s) %s; pass the item table",
                                     paste(miss, collapse = ", ")), call. = FALSE)
    have <- intersect(miss, names(items))
    it <- items[!duplicated(items$item), c("item", have), drop = FALSE]
    for (c in names(it)) if (is.factor(it[[c]])) it[[c]] <- as.character(it[[c]])
    data <- merge(data, it, by = "item", all.x = TRUE, sort = FALSE)
  }
  miss <- setdiff(.design, names(data))
  if (length(miss)) stop(sprintf("data: missing column(s) %s and the item table lacks them",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  if (!"model" %in% names(data)) data$model <- ""
  if ("study" %in% names(data)) data <- data[as.character(data$study) %in% "survey_bias", ]
  # only rows of question pairs: human survey rows of the same study carry no bias/form
  data <- data[!is.na(data$bias) & !is.na(data$form) & data$bias != "", , drop = FALSE]
  data$perturbation[is.na(data$perturbation)] <- ""
  data$response <- toupper(trimws(as.character(data$response)))
  data$weight <- suppressWarnings(as.numeric(data$weight))
  if (anyNA(data$weight)) stop("data: column 'weight' has missing or non-numeric values",
                               call. = FALSE)
  bad <- setdiff(unique(data$bias), .bias_order)
  if (length(bad)) stop(sprintf("data: unknown bias value(s) %s", paste(bad, collapse = ", ")),
                        call. = FALSE)
  bad <- setdiff(unique(data$form), c("original", "modified"))
  if (length(bad)) stop(sprintf("data: column 'form' has %s; use original or modified",
                                paste(bad, collapse = ", ")), call. = FALSE)
  data
}

# one text id per row from several columns ("" for all rows when there are none)
.group_id <- function(d, cols) {
  if (!length(cols)) return(rep("", nrow(d)))
  do.call(paste, c(lapply(d[cols], as.character), sep = "\r"))
}

# percentage of one form's weight on `options`, per (model, bias, perturbation, key)
.pct <- function(d, form, options) {
  d <- d[d$form == form, , drop = FALSE]
  if (!nrow(d)) return(data.frame(id = character(0), pct = numeric(0), n = numeric(0)))
  id <- .group_id(d, c("model", "bias", "perturbation", "key"))
  tot <- tapply(d$weight, id, sum)
  hit <- tapply(d$weight * (d$response %in% options), id, sum)
  data.frame(id = names(tot), pct = as.numeric(100 * hit[names(tot)] / tot), n = as.numeric(tot),
             stringsAsFactors = FALSE)
}

.order_bias <- function(df) {
  b <- match(df$bias, .bias_order)
  p <- match(df$perturbation, c("", .perturbation_order))
  p[is.na(p)] <- 99L
  df <- df[order(df$model, b, p, df$key, method = "radix"), , drop = FALSE]
  rownames(df) <- NULL
  df
}

#' Survey Response-Bias Deltas per Question, and Tests across Questions
#'
#' \code{delta_bias}: the change in answers between the two forms of each question pair (Tjuatja et
#' al. 2024), in percentage points, as the Python \samp{simsubjects.studies.survey_bias.analysis.question_deltas}
#' and the released BiasMonkey analysis. \code{delta_tests}: per model, bias and perturbation, the
#' one-sample t-test of the mean delta against 0 (the paper's test) and Welch's test of the first
#' form's percentages against the second's.
#'
#' @param data tidy responses of the survey_bias study: \code{item, response, weight}, the design columns \code{key, bias, perturbation, form} (or \code{items} to join them from) and \code{model}. Rows without a bias or form (human survey rows) are ignored. Response labels are the option letters, any case.
#' @param items the item table, used when \code{data} lacks design columns.
#' @param exclude allow/forbid question keys left out (the released analysis's eight).
#' @param deltas the result of \code{delta_bias}.
#' @template conf_level
#' @details
#' Weights are pooled over the trials of each question form; the share of an option is its weight
#' over the form's total (counts of samples, or probabilities). Delta = 100 share(first form, first
#' options) - 100 share(second form, second options):
#' \tabular{lll}{
#'   bias \tab first \tab second \cr
#'   acquiescence \tab modified \[A\] \tab original \[A\] \cr
#'   allow_forbid \tab original \[B\] \tab modified \[A\] (perturbation pairs: \[B\]) \cr
#'   response_order \tab original \[A\] \tab modified \[A\] (answers mapped back) \cr
#'   opinion_float \tab original \[C\] \tab modified \[C\] \cr
#'   odd_even \tab modified \[B, D\] \tab original \[B, D\] \cr
#' }
#' Perturbation pairs use their bias's rule. The opinion-float perturbation deltas are the odd/even
#' perturbation pairs (\code{pairs_from = "odd_even"}) unless opinion-float pairs were collected.
#' @return
#' \code{delta_bias}: one row per model, bias, perturbation (\code{""} for the bias pair) and question
#' \code{key}, with \code{estimate} (the delta), \code{pct_first, pct_second, first, second,
#' n_first, n_second, pairs_from}. \code{delta_tests}: two rows per model, bias and perturbation:
#' \code{model, bias, perturbation, setting, pairs_from, term, estimate, std.error, statistic, df,
#' p.value, conf.low, conf.high, method, n} (questions), \code{effect_size} (Cohen's d of the deltas,
#' t / sqrt(n); Lakens' d_av of the two forms for Welch's) and \code{effect_size_type}.
#' @examples
#' d <- expand.grid(key = c("K1", "K2", "K3"), form = c("original", "modified"),
#'                  response = c("A", "B"), stringsAsFactors = FALSE)
#' d$bias <- "acquiescence"
#' d$perturbation <- ""
#' d$item <- paste(d$bias, d$key, d$form, sep = "/")
#' d$weight <- c(30, 25, 10, 40, 20, 20, 20, 25, 40, 10, 30, 30)
#' deltas <- delta_bias(d)
#' deltas
#' delta_tests(deltas)
#' @rdname delta_bias
#' @export
delta_bias <- function(data, items = NULL,
                       exclude = c("GAP21Q46_W82", "RACESURV15b_W43", "DRONE4D_W27",
                                   "ABORTIONALLOW_W32", "INEQ10_W54", "INEQ11_W54",
                                   "POLICY1_W42", "GOVT_ROLE_W32")) {
  d <- .prepare_bias(data, items)
  d <- d[!(d$bias == "allow_forbid" & d$key %in% exclude), , drop = FALSE]
  if (!nrow(d)) stop("data: no survey_bias rows to analyse", call. = FALSE)
  cols <- c("model", "bias", "perturbation", "key")
  frames <- list()
  for (g in split(d, .group_id(d, c("bias", "perturbation")), drop = TRUE)) {
    bias <- g$bias[1]
    pert <- g$perturbation[1]
    rule <- if (pert == "") .bias_rules[[bias]] else .perturbation_rules[[bias]]
    a <- .pct(g, rule$first_form, rule$first_options)
    b <- .pct(g, rule$second_form, rule$second_options)
    m <- merge(a, b, by = "id", all = TRUE, suffixes = c("_first", "_second"))
    keys <- g[!duplicated(.group_id(g, cols)), cols, drop = FALSE]
    keys$id <- .group_id(keys, cols)
    m <- merge(keys, m, by = "id")
    frames[[length(frames) + 1]] <- data.frame(
      m[cols], estimate = m$pct_first - m$pct_second, pct_first = m$pct_first,
      pct_second = m$pct_second,
      first = sprintf("%s[%s]", rule$first_form, paste(rule$first_options, collapse = ",")),
      second = sprintf("%s[%s]", rule$second_form, paste(rule$second_options, collapse = ",")),
      n_first = m$n_first, n_second = m$n_second, pairs_from = bias, stringsAsFactors = FALSE)
  }
  out <- do.call(rbind, frames)
  # the paper's opinion-float delta_p are the odd/even perturbation pairs (same questions, odd/even
  # rule) unless opinion-float perturbation pairs were collected themselves
  have <- .group_id(out[out$bias == "opinion_float", ], c("model", "perturbation"))
  borrow <- out[out$bias == "odd_even" & out$perturbation != "", , drop = FALSE]
  borrow <- borrow[!.group_id(borrow, c("model", "perturbation")) %in% have, , drop = FALSE]
  if (nrow(borrow)) {
    borrow$bias <- "opinion_float"
    borrow$pairs_from <- "odd_even"
    out <- rbind(out, borrow)
  }
  .order_bias(out)
}

#' @rdname delta_bias
#' @export
delta_tests <- function(deltas, conf.level = 0.95) {
  need <- c("model", "bias", "perturbation", "estimate", "pct_first", "pct_second")
  miss <- setdiff(need, names(deltas))
  if (length(miss)) stop(sprintf("deltas: missing column(s) %s; build it with delta_bias()",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  deltas <- .order_bias(.chr_cols(.plain(deltas, "deltas")))
  id <- .group_id(deltas, c("model", "bias", "perturbation"))
  rows <- list()
  for (k in unique(id)) {
    g <- deltas[id == k & !is.na(deltas$estimate), , drop = FALSE]
    first <- deltas[id == k, , drop = FALSE][1, ]
    base <- data.frame(model = first$model, bias = first$bias, perturbation = first$perturbation,
                       setting = if (first$perturbation == "") "bias" else first$perturbation,
                       pairs_from = if ("pairs_from" %in% names(g) && nrow(g)) g$pairs_from[1]
                                    else first$bias, stringsAsFactors = FALSE)
    one <- one_sample_test(g$estimate, conf.level = conf.level)
    welch <- welch_test(g$pct_first, g$pct_second, conf.level = conf.level)
    cols <- c("term", "estimate", "std.error", "statistic", "df", "p.value", "conf.low",
              "conf.high", "method")
    # Cohen's d of the deltas from t.test's own output (d = t / sqrt(n)); welch_test carries Lakens' d_av
    d <- if (is.finite(one$statistic)) unname(one$statistic) / sqrt(one$n) else NA_real_
    rows[[length(rows) + 1]] <- cbind(base, one[cols], n = one$n, effect_size = d, effect_size_type = "cohen_d")
    rows[[length(rows) + 1]] <- cbind(base, welch[cols], n = welch$n1 + welch$n2,
                                      welch[c("effect_size", "effect_size_type")])
  }
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}
