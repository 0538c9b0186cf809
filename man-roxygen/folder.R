#' @param folder A study's run folder of a replication (written by `simsubjects replicate`, read with
#'   [read_run()]): its `export/responses.rds` (or `.csv`) and `export/items.rds`.
#' @return A named list of data frames, one per result table; [write_results()] writes each as
#'   `<name>.csv`. Columns follow broom: `estimate`, `std.error`, `statistic`, `df`, `p.value`,
#'   `conf.low`, `conf.high`, `n`.
#' @family replication
