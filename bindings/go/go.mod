module github.com/oneflow-c/oneflow-go

go 1.19
