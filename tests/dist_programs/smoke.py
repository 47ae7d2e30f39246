import numpy as np, boundfit as bf
print("init", flush=True)
dp = bf.distribution.DataParallel()
print(bf.distribution.rank(), bf.distribution.num_processes(), flush=True)
buf = np.array([bf.distribution.rank() + 1.0])
bf._core.dist_allreduce_f64(buf, 0)
print("sum", buf, flush=True)
