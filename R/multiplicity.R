#' Holm or Benjamini-Hochberg adjusted p-values, one family per group
#'
#' The R twin of `simsubjects.analyze.methods.multiplicity`: `stats::p.adjust` within each family.
#' Missing p-values stay missing and do not count toward a family's size (p.adjust's default).
#'
#' @param p numeric vector of p-values.
#' @param family character vector, the family of each p-value (default: one family).
#' @param method a method of `p.adjust`: "holm" or "BH" (also "bonferroni", "BY", ...).
#' @return data.frame with columns family, p.value, p.adjusted (in the input order).
#' @export
adjust_p <- function(p, family = rep("all", length(p)), method = "holm") {
  p <- as.numeric(p)
  family <- as.character(family)
  stopifnot(length(family) == length(p))
  out <- rep(NA_real_, length(p))
  for (f in unique(family)) {
    i <- which(family == f)
    out[i] <- stats::p.adjust(p[i], method = method)
  }
  data.frame(family = family, p.value = p, p.adjusted = out, stringsAsFactors = FALSE)
}
