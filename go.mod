module github.com/seed12530e24/hiercoll

go 1.26.8

require (
	github.com/NVIDIA/go-nvml v0.13.0-1
	github.com/stretchr/testify v1.12.1
	golang.org/x/sync v0.24.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
