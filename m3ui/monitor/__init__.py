"""Live monitoring without Gradio: one background `Sampler` reads the GPUs (NVML), the CPU (psutil), the
engine (/v1/loads, /metrics, /server_info) and the expert recorder's dumps, and keeps the latest snapshot
and a rolling history for every browser session to read."""
