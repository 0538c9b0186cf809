#' @param folder A study's run folder of a replication (written by \code{simsubjects replicate}, read with
#'   \code{\link{read_run}}): its \code{export/responses.rds} (or \code{.csv}) and \code{export/items.rds}.
#' @return A named list of data frames, one per result table; \code{\link{write_results}} writes each as
#'   \code{<name>.csv}. Columns follow broom: \code{estimate}, \code{std.error}, \code{statistic}, \code{df}, \code{p.value},
#'   \code{conf.low}, \code{conf.high}, \code{n}.
#' @family replication
