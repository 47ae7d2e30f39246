"""The machine a run meets: memory budgets (budget.py), the BLAS threads and
their memory (blas_runtime.py), devices (devices.py), the CUDA libraries of
NVIDIA's wheels (cuda_libs.py)."""
