# Result classes, so that the package fits R's ecosystem (issue 29): every estimate table stays a
# data frame (broom's column names) with a class that print(), plot(), tidy(), glance() and
# as_cregg() know. The class rides on top of "data.frame", so code that treats results as frames
# (rbind, merge, write.csv) is unaffected.

# ggplot2's data pronoun, evaluated by ggplot2 inside aes()
utils::globalVariables(".data")

#' @noRd
.result <- function(d, class, info) {
  attr(d, "simsubjects") <- info
  class(d) <- unique(c(class, "simsubjects_result", "data.frame"))
  d
}

#' @noRd
.info <- function(x) {
  i <- attr(x, "simsubjects", exact = TRUE)
  if (is.null(i)) list() else i
}

#' Print, Plot, Tidy and Glance at a simsubjects Result
#'
#' The estimate tables of \code{\link{amce}}, \code{\link{conjoint_amce}} and \code{\link{conjoint_mm}}
#' are data frames of class \code{simsubjects_amce} or \code{simsubjects_mm} (both also
#' \code{simsubjects_result}). \code{print()} shows what was estimated, on which unit, then the
#' table; \code{plot()} draws each estimate with its interval (with \pkg{ggplot2} where it is
#' installed, base graphics otherwise); \code{tidy()} gives the plain data frame with broom's
#' names; \code{glance()} one row about the fit.
#'
#' @param x a result of \code{amce()}, \code{conjoint_amce()} or \code{conjoint_mm()}.
#' @param digits significant digits printed.
#' @param ... unused.
#' @return \code{print()} and \code{plot()}: \code{x} invisibly (\code{plot()}: the ggplot object when
#'   \pkg{ggplot2} draws). \code{tidy()}: a data frame. \code{glance()}: a one-row data frame with
#'   \code{estimand, outcome, nobs, n_clusters, unit, se_type, conf.level}.
#' @examples
#' set.seed(1)
#' d <- data.frame(id = rep(1:40, each = 4), g = sample(c("Female", "Male"), 160, TRUE))
#' d$y <- rbinom(160, 1, ifelse(d$g == "Male", 0.6, 0.4))
#' a <- conjoint_amce(d, y ~ g, id = ~id)
#' a
#' tidy(a)
#' glance(a)
#' plot(a)
#' @name simsubjects_result
NULL

#' @rdname simsubjects_result
#' @export
print.simsubjects_result <- function(x, digits = 4, ...) {
  i <- .info(x)
  what <- if (inherits(x, "simsubjects_mm")) "Marginal means" else "AMCEs"
  cat(sprintf("<simsubjects %s of %s: %d rows; %s errors clustered by %s; %s%% intervals>\n", what,
              if (is.null(i$outcome)) "?" else i$outcome, nrow(x),
              if (is.null(i$se_type)) "?" else i$se_type,
              if (is.null(i$unit)) "row" else i$unit,
              format(100 * if (is.null(i$conf.level)) 0.95 else i$conf.level)))
  print(tidy.simsubjects_result(x), digits = digits, row.names = FALSE)
  invisible(x)
}

#' @rdname simsubjects_result
#' @importFrom generics tidy
#' @method tidy simsubjects_result
#' @export
tidy.simsubjects_result <- function(x, ...) {
  attr(x, "simsubjects") <- NULL
  class(x) <- "data.frame"
  rownames(x) <- NULL
  x
}

#' @rdname simsubjects_result
#' @importFrom generics glance
#' @method glance simsubjects_result
#' @export
glance.simsubjects_result <- function(x, ...) {
  i <- .info(x)
  get <- function(k, default = NA) if (is.null(i[[k]])) default else i[[k]]
  data.frame(estimand = if (inherits(x, "simsubjects_mm")) "mm" else "amce",
             outcome = get("outcome", NA_character_), nobs = get("n", NA_integer_),
             n_clusters = get("n_clusters", NA_integer_), unit = get("unit", NA_character_),
             se_type = get("se_type", NA_character_), conf.level = get("conf.level", NA_real_),
             stringsAsFactors = FALSE)
}

#' @rdname simsubjects_result
#' @export
plot.simsubjects_result <- function(x, ...) {
  d <- tidy.simsubjects_result(x)
  group <- if ("feature" %in% names(d)) d$feature else if ("attribute" %in% names(d)) d$attribute else ""
  lab <- if ("level" %in% names(d)) paste(group, d$level, sep = ": ") else d$term
  d$label <- factor(lab, levels = rev(unique(lab)))
  ref <- if (inherits(x, "simsubjects_mm")) .info(x)$h0 else 0
  if (is.null(ref)) ref <- 0
  xlab <- if (inherits(x, "simsubjects_mm")) "marginal mean" else "AMCE"
  if (requireNamespace("ggplot2", quietly = TRUE)) {
    p <- ggplot2::ggplot(d, ggplot2::aes(x = .data$estimate, y = .data$label)) +
      ggplot2::geom_vline(xintercept = ref, linetype = "dashed", colour = "grey50") +
      ggplot2::geom_errorbarh(ggplot2::aes(xmin = .data$conf.low, xmax = .data$conf.high), height = 0,
                              na.rm = TRUE) +
      ggplot2::geom_point(na.rm = TRUE) + ggplot2::labs(x = xlab, y = NULL)
    print(p)
    return(invisible(p))
  }
  y <- as.integer(d$label)
  rng <- range(c(d$estimate, d$conf.low, d$conf.high, ref), na.rm = TRUE)
  old <- graphics::par(mar = c(4, max(4, max(nchar(lab)) * 0.45), 1, 1))
  on.exit(graphics::par(old))
  graphics::plot(d$estimate, y, xlim = rng, yaxt = "n", pch = 19, xlab = xlab, ylab = "")
  graphics::axis(2, at = y, labels = as.character(d$label), las = 1, cex.axis = 0.7)
  graphics::abline(v = ref, lty = 2, col = "grey50")
  ok <- !is.na(d$conf.low) & !is.na(d$conf.high)
  graphics::segments(d$conf.low[ok], y[ok], d$conf.high[ok], y[ok])
  invisible(x)
}

#' Convert to cregg's Layout
#'
#' The frame \pkg{cregg}'s \code{cj()}, \code{amce()} and \code{mm()} return, from a
#' \code{\link{conjoint_amce}} or \code{\link{conjoint_mm}} result (or a table of the same columns,
#' such as \code{replicate_conjoint()}'s): columns \code{outcome, statistic} (\code{"amce"} or
#' \code{"mm"}), \code{feature, level} (factors in the design's order), \code{estimate, std.error,
#' z, p, lower, upper}, class \code{cj_amce} or \code{cj_mm}; a \code{source} column becomes cregg's
#' \code{BY} (the grouping of \code{cj(by = )}), first. cregg itself is not needed.
#'
#' @param x a conjoint result.
#' @param outcome the outcome's name, when \code{x} does not record it.
#' @return A data frame of class \code{cj_amce} or \code{cj_mm}.
#' @examples
#' set.seed(1)
#' d <- data.frame(id = rep(1:40, each = 4), g = sample(c("Female", "Male"), 160, TRUE))
#' d$y <- rbinom(160, 1, ifelse(d$g == "Male", 0.6, 0.4))
#' as_cregg(conjoint_mm(d, y ~ g, id = ~id, h0 = 0.5))
#' @export
as_cregg <- function(x, outcome = NULL) {
  d <- .plain(x, "x")
  miss <- setdiff(c("feature", "level", "estimate", "std.error", "statistic", "p.value", "conf.low",
                    "conf.high"), names(d))
  if (length(miss)) {
    stop(sprintf("x: missing column(s) %s; expected a conjoint_amce() or conjoint_mm() result",
                 paste(miss, collapse = ", ")), call. = FALSE)
  }
  if (is.null(outcome)) outcome <- .info(x)$outcome
  if (is.null(outcome)) outcome <- if ("outcome" %in% names(d)) as.character(d$outcome) else "outcome"
  stat <- if (inherits(x, "simsubjects_mm") || identical(attr(x, "estimand"), "mm")) "mm" else "amce"
  out <- data.frame(outcome = outcome, statistic = stat,
                    feature = factor(d$feature, levels = unique(as.character(d$feature))),
                    level = factor(d$level, levels = unique(as.character(d$level))),
                    estimate = d$estimate, std.error = d$std.error, z = d$statistic, p = d$p.value,
                    lower = d$conf.low, upper = d$conf.high, stringsAsFactors = FALSE)
  if ("source" %in% names(d)) out <- data.frame(BY = factor(d$source, unique(d$source)), out)
  structure(out, class = c(paste0("cj_", stat), "data.frame"))
}

#' @noRd
.deprecated <- function(old, new) {
  warning(sprintf("`%s` is deprecated; use `%s`", old, new), call. = FALSE)
}

#' One-sided formula (~respondent) or a name: the column name
#' @noRd
.column_arg <- function(x, arg) {
  if (is.null(x)) return(NULL)
  if (inherits(x, "formula")) {
    v <- all.vars(x)
    if (length(v) != 1) stop(sprintf("%s: expected one column, as ~name", arg), call. = FALSE)
    return(v)
  }
  if (!is.character(x) || length(x) != 1) stop(sprintf("%s: expected a column name or ~name", arg), call. = FALSE)
  x
}

#' outcome ~ A + B * C: the outcome, the features and the two-way constraints ("B:C")
#' @noRd
.parse_formula <- function(formula) {
  if (length(formula) != 3) stop("formula: expected outcome ~ feature + feature", call. = FALSE)
  outcome <- all.vars(formula[[2]])
  tt <- stats::terms(formula)
  labels <- attr(tt, "term.labels")
  order <- attr(tt, "order")
  if (length(outcome) != 1 || any(order > 2)) {
    stop("formula: expected one outcome and features joined by + (or * for a restricted pair)", call. = FALSE)
  }
  list(outcome = outcome, features = labels[order == 1], constraints = labels[order == 2])
}

#' @importFrom generics tidy
#' @export
generics::tidy

#' @importFrom generics glance
#' @export
generics::glance
