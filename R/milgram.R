# Obedience survival (Milgram 1963; Aher et al. 2023, Figure 21): the share of subjects still
# obeying at each shock level, from a break-off table. A subject whose break-off level is L
# administered levels 1..L and refused L + 1; so the share still obeying at level L is the share
# with break-off >= L. Kaplan-Meier through survival::survfit: the same shares when nobody is
# censored, and it takes subjects whose record stopped before they refused (censored) correctly.

milgram_survival <- function(breakoff, completed = 0, max_level = 30, by = NULL,
                             conf.level = 0.95) {
  if (is.numeric(breakoff)) breakoff <- data.frame(level = breakoff)
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
