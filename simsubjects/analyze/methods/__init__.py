"""Statistical methods, one function per method, in family modules: tests, survival, regression.

Every function returns broom's names (estimate, std.error, statistic, df, p.value, conf.low,
conf.high, n), as the R twins do. Maintained libraries compute where they follow the needed
convention (scipy for t-tests and rank tests, statsmodels for Kaplan-Meier, the log-rank test and
CR0/CR1 clustered OLS); hand-written code says why next to it.
"""
