@echo off
rem Shell completion for `kubectl lanaccess` on Windows. kubectl (1.26 or later) finds
rem kubectl_complete-lanaccess with exec.LookPath, which tries the PATHEXT extensions
rem (.cmd among them): put this file on PATH beside kubectl-lanaccess.exe.
kubectl-lanaccess __complete %*
