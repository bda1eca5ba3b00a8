"""Launch the kernel: ``python -m co_kernel -f {connection_file}``."""

from ipykernel.kernelapp import IPKernelApp

from .kernel import CoKernel

if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=CoKernel)
