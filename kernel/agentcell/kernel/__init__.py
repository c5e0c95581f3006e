"""The Jupyter side of agentcell: the kernel, its magics, the IPython extension and the kernelspec.

Imports from here load IPython; the engine (``agentcell`` itself) never does.
"""
