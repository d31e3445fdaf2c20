raise ImportError("kt_kernel/__init__ imports torch in the real package: the microbenchmark must never run it")
