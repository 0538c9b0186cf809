library(testthat)
library(simsubjects)

test_check("simsubjects")
