//! The offscreen renderer through the layer: both render paths, with no
//! layer, pass-through and forced hooks, give the same, correct image.

use overlap_tests::harness::{self, app, run, Layers};
use overlap_tests::render::{expected_scene_pixel, Image};

fn render(path: &str, layers: Layers, force: bool) -> (String, Image) {
    let png = harness::scratch("png").join("out.png");
    let mut cmd = app(layers, &["render", path, "96", "64", png.to_str().unwrap()]);
    if force {
        cmd.env("VK_OVERLAP_EMULATION_FORCE_ENABLE", "1");
    }
    let o = run(&mut cmd);
    o.assert_ok();
    assert!(o.value("checked_pixels").unwrap().parse::<u32>().unwrap() > 96 * 64 / 3);
    (o.value("checksum").unwrap().to_string(), Image::read_png(&png).unwrap())
}

fn check_png(img: &Image) {
    assert_eq!((img.width, img.height), (96, 64));
    let mut checked = 0;
    for y in 0..img.height {
        for x in 0..img.width {
            if let Some(want) = expected_scene_pixel(x, y, img.width, img.height) {
                assert_eq!(img.pixel(x, y), want, "pixel ({x},{y})");
                checked += 1;
            }
        }
    }
    assert!(checked > 2000);
}

#[test]
fn render_pass_and_dynamic_rendering_match_without_and_with_the_layer() {
    for path in ["renderpass", "dynamic"] {
        let (reference, img) = render(path, Layers::None, false);
        check_png(&img);
        for (layers, force) in
            [(Layers::OverlapOverValidation, false), (Layers::OverlapOverValidation, true), (Layers::Overlap, true)]
        {
            let (sum, img) = render(path, layers, force);
            assert_eq!(sum, reference, "{path} {layers:?} force={force}");
            check_png(&img);
        }
    }
}
