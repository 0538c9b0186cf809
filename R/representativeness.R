# Representativeness (Santurkar et al. 2023) as simsubjects/analyze/methods/representativeness.py: per
# question the Wasserstein-1 distance between the model's and people's answer distributions on the
# options' ordinal positions, divided by the span of the positions (N - 1 for positions 1..N);
# Rep = 1 - mean distance over questions. Refusals are dropped and the rest renormalized.

#' @rdname representativeness
#' @export
wasserstein_ordinal <- function(pos_a, w_a, pos_b, w_b, normalize = TRUE) {
  pos_a <- as.numeric(pos_a)
  pos_b <- as.numeric(pos_b)
  w_a <- as.numeric(w_a) / sum(w_a)
  w_b <- as.numeric(w_b) / sum(w_b)
  x <- sort(unique(c(pos_a, pos_b)))
  # W1 on the line is the area between the two CDFs
  Fa <- vapply(x, function(v) sum(w_a[pos_a <= v]), numeric(1))
  Fb <- vapply(x, function(v) sum(w_b[pos_b <= v]), numeric(1))
  w1 <- sum(abs(Fa - Fb)[-length(x)] * diff(x))
  if (!normalize) return(w1)
  span <- max(x) - min(x)
  if (span <= 0) return(NA_real_)
  w1 / span
}

.ordinal_distribution <- function(dist, group, where) {
  miss <- setdiff(c("key", "position", "weight"), names(dist))
  if (length(miss)) stop(sprintf("%s: missing column(s) %s; expected key, position, weight[, refusal]",
                                 where, paste(miss, collapse = ", ")), call. = FALSE)
  d <- .plain(dist, where)
  for (c in names(d)) if (is.factor(d[[c]])) d[[c]] <- as.character(d[[c]])
  d$position <- suppressWarnings(as.numeric(d$position))
  d$weight <- suppressWarnings(as.numeric(d$weight))
  if (anyNA(d$weight) || any(d$weight < 0)) {
    stop(sprintf("%s: column 'weight' has missing or negative values", where), call. = FALSE)
  }
  keep <- !is.na(d$position)
  if ("refusal" %in% names(d)) {
    r <- as.logical(d$refusal)
    keep <- keep & !(r %in% TRUE)
  }
  d <- d[keep, , drop = FALSE]
  keys <- c(group, "key")
  d$.id <- .group_id(d, c(keys, "position"))
  w <- tapply(d$weight, d$.id, sum)
  d <- d[!duplicated(d$.id), c(keys, "position", ".id"), drop = FALSE]
  d$weight <- as.numeric(w[d$.id])
  q <- .group_id(d, keys)
  total <- stats::ave(d$weight, q, FUN = sum)
  d$weight <- d$weight / total
  d <- d[total > 0, setdiff(names(d), ".id"), drop = FALSE]
  rownames(d) <- NULL
  d
}

.human_side <- function(human, by) {
  if (!length(by) && "attribute" %in% names(human)) {
    overall <- human[as.character(human$attribute) %in% "Overall", , drop = FALSE]
    if (!nrow(overall) && length(unique(human$attribute)) > 1) {
      stop("human: several demographic groups and no 'Overall' rows; pass by = c(\"attribute\", \"group\")",
           call. = FALSE)
    }
    return(if (nrow(overall)) overall else human)
  }
  miss <- setdiff(by, names(human))
  if (length(miss)) stop(sprintf("human: missing column(s) %s named in by",
                                 paste(miss, collapse = ", ")), call. = FALSE)
  human
}

#' @rdname representativeness
#' @export
wasserstein_by_question <- function(model, human, by = NULL) {
  by <- as.character(by)
  model <- .plain(model, "model")
  human <- .plain(human, "human")
  if (!"model" %in% names(model)) model$model <- ""
  shared <- intersect(by, names(model))
  m <- .ordinal_distribution(model, c("model", shared), "model")
  h <- .ordinal_distribution(.human_side(human, by), by, "human")
  hid <- .group_id(h, c("key", by))
  hgroups <- split(h, factor(hid, levels = unique(hid)))
  mid <- .group_id(m, c("model", shared, "key"))
  rows <- list()
  for (mg in split(m, factor(mid, levels = unique(mid)))) {
    for (hg in hgroups) {
      if (hg$key[1] != mg$key[1]) next
      if (length(shared) && any(unlist(hg[1, shared]) != unlist(mg[1, shared]))) next
      row <- data.frame(model = mg$model[1], hg[1, by, drop = FALSE], key = mg$key[1],
                        distance = wasserstein_ordinal(mg$position, mg$weight, hg$position, hg$weight),
                        n_options_model = nrow(mg), n_options_human = nrow(hg),
                        stringsAsFactors = FALSE)
      rows[[length(rows) + 1]] <- row
    }
  }
  if (!length(rows)) {
    stop("representativeness: no question key is in both the model and the human distributions",
         call. = FALSE)
  }
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}

#' Representativeness of Model Opinions: Wasserstein-1 on Ordinal Answers
#'
#' Per question, the Wasserstein-1 (earth mover's) distance between the model's and people's answer
#' distributions on the options' ordinal positions, divided by the span of the positions (N - 1 for
#' positions 1..N), so it lies in \[0, 1\]; representativeness = 1 - mean distance over questions
#' (Santurkar et al. 2023, as Tjuatja et al. 2024 use it). Written in base R; the numbers agree with
#' \samp{simsubjects.analyze.methods.representativeness}.
#'
#' @param pos_a,w_a,pos_b,w_b ordinal positions and weights of two distributions (weights are normalized).
#' @param normalize divide by the span of all positions (\code{NA} when it is 0).
#' @param model,human tidy distributions, one row per question and option: \code{key}, \code{position} (\code{NA} for refusals), \code{weight}, optionally \code{refusal} (\code{TRUE} rows are dropped) and, for the model side, \code{model}. The rest of each question is renormalized. Human rows with \code{attribute}/\code{group} columns: without \code{by}, the \code{"Overall"} rows are used.
#' @param by human columns that define groups, e.g. \code{c("attribute", "group")}; model rows that carry them too are matched group by group.
#' @template conf_level
#' @return
#' \code{wasserstein_ordinal}: a number. \code{wasserstein_by_question}: \code{model}, the \code{by}
#' columns, \code{key, distance, n_options_model, n_options_human}. \code{representativeness}: one
#' row per model (and group): \code{term, estimate} (1 - mean distance), \code{std.error} (of the
#' mean distance), \code{df, conf.low, conf.high, mean_distance, n} (questions).
#' @examples
#' m <- data.frame(key = rep(c("Q1", "Q2"), c(3, 4)), position = c(1:3, 1:4),
#'                 weight = c(0.5, 0.5, 0, 1, 0, 0, 0))
#' h <- data.frame(key = rep(c("Q1", "Q2"), c(3, 4)), position = c(1:3, 1:4),
#'                 weight = c(0, 50, 50, 0, 0, 0, 7))
#' wasserstein_by_question(m, h)
#' representativeness(m, h)
#' @rdname representativeness
#' @export
representativeness <- function(model, human, by = NULL, conf.level = 0.95) {
  by <- as.character(by)
  per_q <- wasserstein_by_question(model, human, by)
  per_q <- per_q[!is.na(per_q$distance), , drop = FALSE]
  id <- .group_id(per_q, c("model", by))
  rows <- lapply(split(per_q, factor(id, levels = unique(id))), function(g) {
    d <- g$distance
    n <- length(d)
    mean_d <- mean(d)
    se <- if (n > 1) stats::sd(d) / sqrt(n) else NA_real_
    q <- if (n > 1) stats::qt(0.5 + conf.level / 2, n - 1) else NA_real_
    data.frame(g[1, c("model", by), drop = FALSE], term = "representativeness",
               estimate = 1 - mean_d, std.error = se, df = if (n > 1) n - 1 else NA_real_,
               conf.low = 1 - mean_d - q * se, conf.high = 1 - mean_d + q * se,
               mean_distance = mean_d, n = n, stringsAsFactors = FALSE)
  })
  out <- do.call(rbind, rows)
  rownames(out) <- NULL
  out
}

# ---------------------------------------------------------------- bootstrap columns on Python's resamples
# R cannot redraw numpy's resamples, so `--check-r` hands R the ones Python drew; these recompute Rep on
# each and the basic bootstrap columns from those values (simsubjects.analyze.methods.representativeness:
# resampled_interval, multinomial_interval).

# The (key, position) columns both sides list, sorted, as "key\rposition" ids
.rep_columns <- function(...) {
  col <- unique(do.call(rbind, lapply(list(...), function(x) x[, c("key", "position")])))
  col <- col[order(col$key, col$position), , drop = FALSE]
  col$id <- paste(col$key, col$position, sep = "\r")
  col
}

# units x columns weights: each unit's summed weight at each (key, position)
.rep_unit_matrix <- function(unit, key, position, w, units, col) {
  unit <- as.character(unit)
  miss <- setdiff(unique(unit), units)
  if (length(miss)) stop(sprintf("unit %s is not among the resampled units", miss[1]), call. = FALSE)
  u <- matrix(0, length(units), nrow(col))
  i <- cbind(match(unit, units), match(paste(key, position, sep = "\r"), col$id))
  for (r in seq_len(nrow(i))) u[i[r, 1], i[r, 2]] <- u[i[r, 1], i[r, 2]] + w[r]
  u
}

# replicates x units counts of the (0-based) row indices each replicate drew
.rep_counts <- function(idx, n) matrix(t(apply(idx + 1, 1, tabulate, nbins = n)), nrow = nrow(idx))

# Rep = 1 - mean over keys of wasserstein_ordinal() (span: the positions either side lists) of the whole
# samples' weights (fm, fh) and of each replicate's (rows of pm, ph); then boot.bias = mean(replicates) -
# Rep, estimate.corrected = Rep - boot.bias and the basic interval [2 Rep - q(1 - a), min(1, 2 Rep - q(a))],
# q = quantile(type = 7), numpy's default linear quantile, at a = half_alpha
.rep_basic_boot <- function(col, fm, fh, pm, ph, half_alpha) {
  rep_of <- function(a, b) {
    dist <- vapply(unique(col$key), function(k) {
      j <- which(col$key == k)
      wasserstein_ordinal(col$position[j], a[j], col$position[j], b[j])
    }, numeric(1))
    1 - mean(dist[is.finite(dist)])
  }
  full <- rep_of(fm, fh)
  reps <- vapply(seq_len(nrow(pm)), function(b) rep_of(pm[b, ], ph[b, ]), numeric(1))
  q <- stats::quantile(reps, c(half_alpha, 1 - half_alpha), type = 7, na.rm = TRUE, names = FALSE)
  bias <- mean(reps, na.rm = TRUE) - full
  data.frame(boot.low = 2 * full - q[2], boot.high = min(1, 2 * full - q[1]), boot.bias = bias,
             estimate.corrected = full - bias, check.names = FALSE)
}

# multinomial_interval's columns (the built-in opinion survey): the model's `units` (unit, key, position,
# weight) resampled by the rows of `idx_m` into `units_m`, the people's redrawn counts `human_pooled`
# (replicates x the columns named by `key`, `position`) against their distribution `human` (key,
# position, weight)
.rep_boot_multinomial <- function(units, human, units_m, idx_m, key, position, human_pooled, half_alpha) {
  col <- .rep_columns(units, human)
  j <- match(col$id, paste(key, as.numeric(position), sep = "\r"))
  if (anyNA(j) || length(key) != nrow(col)) stop("human_pooled: its columns are not the distributions' (key, position)",
                                                  call. = FALSE)
  um <- .rep_unit_matrix(units$unit, units$key, units$position, units$weight, units_m, col)
  fh <- as.numeric(tapply(human$weight, factor(paste(human$key, human$position, sep = "\r"), levels = col$id), sum))
  fh[is.na(fh)] <- 0
  .rep_basic_boot(col, colSums(um), fh, .rep_counts(idx_m, nrow(um)) %*% um, human_pooled[, j, drop = FALSE],
                  half_alpha)
}
