# Provenance of conjoint_cregg_reference.csv: cregg 0.3.7's own estimates on the bundled human data.
# cregg is not on Debian and CI cannot reach CRAN; it was installed once, locally, from GitHub
# leeper/cregg at commit 090689064d76e37b525eb1204633e219c69e659d with ggstance (used only by its
# plots) removed from DESCRIPTION and NAMESPACE, then this script was run with
#   R_LIBS=<that library> Rscript tests/data/conjoint_cregg_reference.R simsubjects/datasets/conjoint
# (the .rda files of /work/shared/data/conjoint are the same tables as the bundled parquet files).
suppressPackageStartupMessages(library(cregg))
args <- commandArgs(TRUE)
load(file.path(args[1], "immigration.rda")); load(file.path(args[1], "taxes.rda"))
feats <- c("Gender", "Education", "LanguageSkills", "CountryOfOrigin", "Job", "JobExperience", "JobPlans",
           "ReasonForApplication", "PriorEntry")
f0 <- reformulate(feats, "ChosenImmigrant")
f1 <- ChosenImmigrant ~ Gender + Education * Job + LanguageSkills + CountryOfOrigin * ReasonForApplication +
  JobExperience + JobPlans + PriorEntry
immigration$ethno <- factor(ifelse(immigration$ethnocentrism > 50, "above 50", "at most 50"),
                            levels = c("at most 50", "above 50"))
tx <- chose_plan ~ taxrate1 + taxrate2 + taxrate3 + taxrate4 + taxrate5 + taxrate6 + taxrev
pick <- function(x, what) data.frame(what = what, BY = if (is.null(x$BY)) "" else as.character(x$BY),
  feature = as.character(x$feature), level = as.character(x$level), estimate = x$estimate,
  std.error = x$std.error)
out <- rbind(
  pick(cj(immigration, f0, id = ~CaseID), "amce"),
  pick(cj(immigration, f1, id = ~CaseID), "amce_restricted"),
  pick(cj(immigration, f0, id = ~CaseID, estimate = "mm"), "mm"),
  pick(cj(immigration, f0, id = ~CaseID, estimate = "mm_diff", by = ~ethno), "mm_diff_ethno"),
  pick(cj(taxes, tx, id = ~ID, weights = ~weight), "taxes_amce_weighted"))
write.csv(out, "tests/data/conjoint_cregg_reference.csv", row.names = FALSE)
