#' @param conf.level Confidence level of the interval (default 0.95), as \code{conf.level} of
#'   \code{\link[stats]{t.test}} and broom's \code{conf.low}/\code{conf.high}.
