"""The engine side of fit / evaluate / predict: the data (data.py, arrays.py,
sources.py), the memory plan (memory.py decides it, plan.py reports it,
plan_plot.py draws it) and the loops (training.py; fit's in fit_loop.py, under
a Strategy: strategy.py, dist_fit.py)."""
