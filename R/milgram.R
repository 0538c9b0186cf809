# Obedience survival (Milgram 1963; Aher et al. 2023, Figure 21): the share of subjects still
# obeying at each shock level, from a break-off table. A subject whose break-off level is L
# administered levels 1..L and refused L + 1; so the share still obeying at level L is the share
# with break-off >= L. Kaplan-Meier through survival::survfit: the same shares when nobody is
# censored, and it takes subjects whose record stopped before they refused (censored) correctly.

#' Share Still Obeying by Shock Level
#'
#' The obedience survival curve of Milgram (1963) and Aher et al. (2023): at each shock level, the
#' share of subjects who administered that shock, from a break-off table.
#'
#' @param breakoff a data frame with \code{level} (the last shock administered: 0 = none, \code{max_level} = the whole procedure), optionally \code{count} (subjects; default 1 per row) and \code{censored} (\code{TRUE}: the record stopped at \code{level} without a refusal, e.g. a run cut by a maximum number of stages; or the number of the row's \code{count} subjects who were censored, as in the Python breakoff table); or a numeric vector of break-off levels.
#' @param completed subjects who went to the last level, added to every group.
#' @param max_level the last level (30 = 450 volts).
#' @param by grouping columns of \code{breakoff} (e.g. \code{"model"}).
#' @template conf_level
#' @details
#' A subject whose break-off level is L refused level L + 1, so the share still obeying at level L is
#' the share with break-off >= L. It is computed as a Kaplan-Meier curve
#' (\code{survival::survfit}), which equals that share when no record is censored; \code{std.error}
#' is Greenwood's (then sqrt(S(1 - S)/N)) and the interval survfit's default (log scale).
#' @return
#' A data frame, one row per level 0..\code{max_level} (and group): the \code{by} columns,
#' \code{term, level, voltage} (15 V per level), \code{n.risk, n.event} (refusals of that level),
#' \code{n.censor, estimate} (share still obeying), \code{std.error, conf.low, conf.high, n}.
#' @examples
#' # Milgram (1963), Experiment 1: 26 of 40 administered 450 V
#' m63 <- data.frame(level = 20:25, count = c(5, 4, 2, 1, 1, 1))
#' s <- milgram_survival(m63, completed = 26)
#' s[s$level %in% c(20, 21, 30), c("level", "voltage", "estimate")]
#' @rdname milgram_survival
#' @export
milgram_survival <- function(breakoff, completed = 0, max_level = 30, by = NULL,
                             conf.level = 0.95) {
  if (is.numeric(breakoff)) breakoff <- data.frame(level = breakoff)
  if (is.data.frame(breakoff)) breakoff <- .plain(breakoff, "breakoff")
  if (!is.data.frame(breakoff) || !"level" %in% names(breakoff)) {
    stop("breakoff: expected a data frame with columns level[, count, censored] or a numeric vector of levels",
         call. = FALSE)
  }
  by <- as.character(by)
  miss <- setdiff(by, names(breakoff))
  if (length(miss)) stop(sprintf("breakoff: missing column(s) %s named in by",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  d <- breakoff
  d$level <- as.numeric(d$level)
  d$count <- if ("count" %in% names(d)) as.numeric(d$count) else 1
  if (anyNA(d$level) || anyNA(d$count) || any(d$count < 0) || any(d$count != round(d$count))) {
    stop("breakoff: level and count must be non-missing, count whole non-negative numbers",
         call. = FALSE)
  }
  if (any(d$level < 0 | d$level > max_level)) {
    stop(sprintf("breakoff: levels must lie in 0..%d", max_level), call. = FALSE)
  }
  # censored: TRUE/FALSE per row, or the number of the row's subjects who were censored (as in
  # the Python breakoff table); completers administered the last level and never refused
  cens <- if ("censored" %in% names(d)) d$censored else FALSE
  n_cens <- if (is.logical(cens)) ifelse(cens %in% TRUE, d$count, 0) else as.numeric(cens)
  if (anyNA(n_cens) || any(n_cens > d$count)) {
    stop("breakoff: column 'censored' must be TRUE/FALSE or a count no larger than count", call. = FALSE)
  }
  d$n_cens <- ifelse(d$level >= max_level, d$count, n_cens)
  if (completed > 0) {
    extra <- d[!duplicated(.group_id(d, by)), , drop = FALSE]
    extra$level <- max_level
    extra$count <- extra$n_cens <- completed
    d <- rbind(d, extra)
  }
  id <- .group_id(d, by)
  rows <- lapply(split(d, factor(id, levels = unique(id))), function(g) {
    lev <- c(rep(g$level, g$count - g$n_cens), rep(g$level, g$n_cens))
    cens <- rep(c(FALSE, TRUE), c(sum(g$count - g$n_cens), sum(g$n_cens)))
    if (!length(lev)) return(NULL)
    # refusing level L + 1 is the event; a censored subject was seen obeying through `level`
    time <- ifelse(cens, lev, lev + 1)
    fit <- survival::survfit(survival::Surv(time, !cens) ~ 1, conf.int = conf.level)
    s <- summary(fit, times = 0:max_level, extend = TRUE)
    out <- data.frame(term = paste("level", s$time), level = s$time, voltage = 15 * s$time,
                      n.risk = s$n.risk, n.event = s$n.event, n.censor = s$n.censor,
                      estimate = s$surv, std.error = s$std.err, conf.low = s$lower,
                      conf.high = s$upper, n = length(lev), stringsAsFactors = FALSE)
    if (length(by)) out <- cbind(g[rep(1, nrow(out)), by, drop = FALSE], out)
    out
  })
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}
