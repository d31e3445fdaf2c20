"""PyTorch's `torch.save` zip format, read and written without torch.

Shared by both sides: the simulated engine writes expert-recorder dumps like sglang-kt does, the monitor
and the placement rules read them (real or simulated). Neither side needs torch installed.
"""
