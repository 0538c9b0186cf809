#' @param conf.level Confidence level of the interval (default 0.95), as `conf.level` of
#'   [stats::t.test()] and broom's `conf.low`/`conf.high`.
