# Under R CMD check the package is attached; testthat::test_dir() on a checkout loads the R/ files
# of the source tree instead, so the tests run without installing the package.
if (!exists("milgram_survival", mode = "function")) {
  for (f in list.files(file.path("..", "..", "R"), pattern = "[.]R$", full.names = TRUE)) {
    source(f, local = TRUE)
  }
  tidy <- generics::tidy  # the package re-exports these generics
  glance <- generics::glance
}
