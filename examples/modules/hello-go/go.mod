module hello-go

go 1.19
