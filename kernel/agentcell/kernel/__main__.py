"""``python -m agentcell.kernel -f CONNECTION_FILE``: what the kernelspec launches."""

from ipykernel.kernelapp import IPKernelApp

from .kernel import AgentCellKernel

if __name__ == "__main__":
    IPKernelApp.launch_instance(kernel_class=AgentCellKernel)
