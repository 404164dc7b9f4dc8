"""The ResNet-18 of the OTA-FD appendix (resnet.py): the stated parameter count D = 11,173,962,
and no running statistics once trained."""


from airfl.papers.ota_fd.resnet import ResNet18BN, parameter_count


def test_resnet18_has_the_papers_parameter_count():
    """11,173,962 parameters (appendix E, stated); counted, not trained."""
    assert parameter_count(ResNet18BN(10)) == 11_173_962


def test_trained_resnet18_bn_has_the_stated_count_and_no_running_statistics():
    """The model X2 trains (`resnet18_bn`): D = 11,173,962 as stated, and a model is its
    parameter vector alone (BatchNorm on batch statistics, no buffers to keep per WD) [R]."""
    from airfl.models.flat import build_model

    model = build_model("resnet18_bn", (3, 32, 32), 10)
    assert model.dim == 11_173_962
    assert not list(model.module.buffers())
