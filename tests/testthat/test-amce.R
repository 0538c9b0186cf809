clustered <- function(seed = 5) {
  set.seed(seed)
  sizes <- sample(2:7, 12, replace = TRUE)
  story <- rep(seq_along(sizes), sizes)
  level <- ifelse(story %% 3 == 0, "Abnormal", "Normal")
  y <- rbinom(length(story), 1, ifelse(level == "Abnormal", 0.7, 0.4)) + rnorm(length(story), 0, 0.1)
  data.frame(y = y, f = level, story = story, stringsAsFactors = FALSE)
}

# the sandwich by hand: X design, e residuals, clusters cl
cr0_by_hand <- function(d) {
  X <- cbind(1, d$f == "Abnormal")
  M <- solve(crossprod(X))
  b <- M %*% crossprod(X, d$y)
  e <- as.vector(d$y - X %*% b)
  meat <- Reduce(`+`, lapply(split(seq_len(nrow(X)), d$story), function(i) {
    s <- crossprod(X[i, , drop = FALSE], e[i])
    s %*% t(s)
  }))
  list(b = b, V = M %*% meat %*% M, X = X, M = M, e = e)
}

test_that("the AMCE of two levels is the difference in means", {
  d <- clustered()
  a <- amce(d, "y", "f", "story", "CR2", levels = c("Abnormal", "Normal"), baseline = "Normal")
  expect_equal(a$estimate, mean(d$y[d$f == "Abnormal"]) - mean(d$y[d$f == "Normal"]))
  expect_equal(a$term, "Abnormal - Normal")
  expect_equal(c(a$n, a$n_clusters, a$n_level, a$n_baseline),
               c(nrow(d), 12, sum(d$f == "Abnormal"), sum(d$f == "Normal")))
  # default baseline: the first level (sorted), so the sign flips
  expect_equal(amce(d, "y", "f", "story")$estimate, -a$estimate)
})

test_that("CR0, stata and cregg follow the formulas", {
  d <- clustered()
  h <- cr0_by_hand(d)
  G <- 12
  N <- nrow(d)
  se0 <- sqrt(h$V[2, 2])
  a0 <- amce(d, "y", "f", "story", "CR0", baseline = "Normal")
  expect_equal(a0$std.error, se0)
  expect_equal(a0$df, G - 1)
  expect_equal(a0$p.value, 2 * pt(-abs(h$b[2] / se0), G - 1))
  a1 <- amce(d, "y", "f", "story", "stata", baseline = "Normal")
  expect_equal(a1$std.error, se0 * sqrt(G / (G - 1) * (N - 1) / (N - 2)))
  expect_equal(a1$df, G - 1)
  ac <- amce(d, "y", "f", "story", "cregg", baseline = "Normal")
  sec <- se0 * sqrt(G / (G - 1))
  expect_equal(ac$std.error, sec)
  expect_equal(ac$df, Inf)
  expect_equal(ac$statistic, h$b[2] / sec)
  expect_equal(ac$p.value, 2 * pnorm(-abs(h$b[2] / sec)))
  expect_equal(c(ac$conf.low, ac$conf.high), h$b[2] + c(-1, 1) * qnorm(0.975) * sec)
})

test_that("CR2 is Bell-McCaffrey with estimatr's Satterthwaite df", {
  d <- clustered(7)
  h <- cr0_by_hand(d)
  X <- h$X
  M <- h$M
  n <- nrow(X)
  IH <- diag(n) - X %*% M %*% t(X)
  groups <- split(seq_len(n), d$story)
  inv_sqrt <- function(A) {
    ev <- eigen(A, symmetric = TRUE)
    v <- ifelse(ev$values > 1e-12, 1 / sqrt(pmax(ev$values, 1e-12)), 0)
    ev$vectors %*% diag(v, length(v)) %*% t(ev$vectors)
  }
  A <- lapply(groups, function(i) inv_sqrt(IH[i, i, drop = FALSE]))
  meat <- Reduce(`+`, Map(function(i, Ag) {
    s <- t(X[i, , drop = FALSE]) %*% Ag %*% h$e[i]
    s %*% t(s)
  }, groups, A))
  V <- M %*% meat %*% M
  # df: with u_g = (I - H) S_g' A_g X_g M e_j, df = (sum l)^2 / sum l^2 over eigenvalues l of U'U
  U <- sapply(seq_along(groups), function(g) {
    cvec <- numeric(n)
    i <- groups[[g]]
    cvec[i] <- A[[g]] %*% X[i, , drop = FALSE] %*% M[, 2]
    IH %*% cvec
  })
  l <- eigen(crossprod(U), symmetric = TRUE, only.values = TRUE)$values
  a <- amce(d, "y", "f", "story", "CR2", baseline = "Normal")
  expect_equal(a$std.error, sqrt(V[2, 2]), tolerance = 1e-10)
  expect_equal(a$df, sum(l)^2 / sum(l^2), tolerance = 1e-8)
})

test_that("levels, baselines and small data", {
  d <- clustered()
  d$f[d$story == 1] <- "Same time"
  three <- amce(d, "y", "f", "story", "CR0", baseline = "Normal")
  expect_equal(three$term, c("Abnormal - Normal", "Same time - Normal"))
  two <- amce(d, "y", "f", "story", "CR0", levels = c("Abnormal", "Normal"), baseline = "Normal")
  keep <- d$f != "Same time"
  expect_equal(two$n, sum(keep))
  expect_equal(two$estimate, mean(d$y[d$f == "Abnormal"]) - mean(d$y[d$f == "Normal"]))
  small <- amce(d[d$story %in% c(2, 3), ], "y", "f", "story", "CR2", baseline = "Normal")
  expect_false(is.na(small$estimate))  # two stories: the estimate, no inference
  expect_true(is.na(small$std.error))
  one <- amce(d[d$f == "Normal", ], "y", "f", "story", levels = c("Abnormal", "Normal"),
              baseline = "Normal")
  expect_true(is.na(one$estimate))
  expect_error(amce(d, "y", "nope", "story"), "missing column")
  expect_error(amce(d, "y", "f", "story", baseline = "Late"), "baseline")
  expect_error(amce(d, "y", "f", "story", se_type = "HC1"))
})

test_that("conjoint_wald(se_type = 'cregg') is survey::regTermTest's Wald F, clustered by respondent within its group", {
  # the unit is the respondent: ids repeat across the two groups and are still two clusters
  set.seed(5)
  d <- data.frame(id = rep(1:30, each = 6), group = rep(c("people", "model"), each = 90))
  for (v in c("A", "B")) d[[v]] <- sample(c("x", "y", "z"), nrow(d), TRUE)
  d$id <- d$id %% 15
  d$chosen <- rbinom(nrow(d), 1, 0.4 + 0.2 * (d$A == "y"))
  ours <- conjoint_wald(d, "chosen", c("A", "B"), by = "group", id = "id", se_type = "cregg")
  cr2 <- conjoint_wald(d, "chosen", c("A", "B"), by = "group", id = "id")
  d$cl <- paste(d$group, d$id)
  for (v in c("A", "B", "group")) d[[v]] <- factor(d[[v]])
  m <- survey::svyglm(chosen ~ (A + B) * group, design = survey::svydesign(ids = ~cl, weights = ~1, data = d))
  ref <- survey::regTermTest(m, ~ group + A:group + B:group, method = "Wald")
  expect_equal(ours$statistic, as.numeric(ref$Ftest), tolerance = 1e-9)
  expect_equal(c(ours$df, ours$df.residual), c(ref$df, ref$ddf))
  expect_equal(ours$p.value, as.numeric(ref$p), tolerance = 1e-7)
  expect_equal(ours$n_clusters, 30)
  # cregg's unclustered cj_anova stays available and differs from it
  expect_false(isTRUE(all.equal(conjoint_anova(d, "chosen", c("A", "B"), by = "group")$statistic, ours$statistic)))
  # the default: CR2 (estimatr) and F(q, G - p), the Python cj_anova
  e <- estimatr::lm_robust(chosen ~ (A + B) * group, data = d, clusters = cl, se_type = "CR2")
  k <- grepl("group", names(coef(e)))
  w <- drop(t(coef(e)[k]) %*% solve(vcov(e)[k, k], coef(e)[k]))
  expect_equal(cr2$statistic, w / sum(k), tolerance = 1e-10)
  expect_equal(cr2$df.residual, 30 - length(coef(e)))
})

test_that("conjoint_wald's CR2 through clubSandwich is estimatr's, with aliased cells and a lone respondent", {
  skip_if_not_installed("clubSandwich")
  # an empty restricted cell (A = z with B = z) leaves aliased columns, whose choice is estimatr's; three model
  # respondents with four profiles each: one of them alone identifies a coefficient (I - H_gg singular)
  set.seed(11)
  d <- data.frame(id = c(rep(1:40, each = 8), rep(41:43, each = 4)),
                  group = c(rep("people", 320), rep("model", 12)))
  for (v in c("A", "B", "C")) d[[v]] <- sample(c("x", "y", "z"), nrow(d), TRUE)
  d$B[d$A == "z" & d$B == "z"] <- "y"
  d$chosen <- rbinom(nrow(d), 1, 0.4 + 0.2 * (d$A == "y"))
  fast <- conjoint_wald(d, "chosen", c("A", "B", "C"), by = "group", id = "id", constraints = "A:B")
  old <- options(simsubjects.clubSandwich = FALSE)
  on.exit(options(old))
  slow <- conjoint_wald(d, "chosen", c("A", "B", "C"), by = "group", id = "id", constraints = "A:B")
  expect_equal(fast$statistic, slow$statistic, tolerance = 1e-10)
  expect_equal(fast[c("df", "df.residual", "n_clusters")], slow[c("df", "df.residual", "n_clusters")])
  expect_equal(fast$p.value, slow$p.value, tolerance = 1e-9)
})

test_that("conjoint_amce and conjoint_mm (se_type 'cregg') are survey::svyglm's, weighted and with an aliased cell", {
  # the package computes cregg's variance as vcovCL's HC0 with G/(G-1), not through survey (whose Matrix is
  # slow to load): here survey::svyglm on svydesign(ids = ~id, weights = ~w) is the reference, as in cregg
  set.seed(13)
  d <- data.frame(id = rep(1:25, each = 6))
  for (v in c("A", "B", "C")) d[[v]] <- factor(sample(c("x", "y", "z"), nrow(d), TRUE), c("x", "y", "z"))
  d$B[d$A == "z" & d$B == "z"] <- "y"  # an empty restricted cell: A:B has an aliased column
  d$w <- stats::runif(25, 0.5, 2)[d$id]
  d$chosen <- rbinom(nrow(d), 1, 0.4 + 0.2 * (d$A == "y"))
  des <- survey::svydesign(ids = ~id, weights = ~w, data = d)
  a <- conjoint_amce(d, "chosen", c("A", "B", "C"), id = "id", weights = "w", constraints = "A:B")
  ref <- survey::svyglm(chosen ~ A + B + C + A:B, design = des)
  expect_true(anyNA(stats::coef(stats::lm(chosen ~ A + B + C + A:B, data = d))))  # Az:Bz, which svyglm leaves out
  for (l in c("y", "z")) {  # C is in no pair: its AMCE is its coefficient
    k <- paste0("C", l)
    expect_equal(a$estimate[a$feature == "C" & a$level == l], unname(stats::coef(ref)[k]), tolerance = 1e-10)
    expect_equal(a$std.error[a$feature == "C" & a$level == l], sqrt(stats::vcov(ref)[k, k]), tolerance = 1e-10)
  }
  # A's AMCE: its main effect plus its interactions averaged over B's three levels (cregg's), with svyglm's
  # covariances
  k <- c("Ay", "Ay:By", "Ay:Bz")
  w <- c(1, 1 / 3, 1 / 3)
  expect_equal(a$estimate[a$feature == "A" & a$level == "y"], sum(w * stats::coef(ref)[k]), tolerance = 1e-10)
  expect_equal(a$std.error[a$feature == "A" & a$level == "y"],
               sqrt(drop(t(w) %*% stats::vcov(ref)[k, k] %*% w)), tolerance = 1e-10)
  m <- conjoint_mm(d, "chosen", c("A", "C"), id = "id", weights = "w")
  for (f in c("A", "C")) {
    r <- survey::svyglm(stats::as.formula(paste("chosen ~ 0 +", f)), design = des)
    expect_equal(m$estimate[m$feature == f], unname(stats::coef(r)), tolerance = 1e-10)
    expect_equal(m$std.error[m$feature == f], unname(sqrt(diag(stats::vcov(r)))), tolerance = 1e-10)
  }
})
