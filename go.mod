module github.com/seed12530e24/hiercoll

go 1.26.8

require github.com/NVIDIA/go-nvml v0.13.0-1 // indirect
