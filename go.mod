module github.com/kernfsim/kernfsim

go 1.26
