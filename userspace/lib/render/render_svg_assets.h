/* render_svg_assets: the CSS and JavaScript embedded in every SVG that
 * render_svg writes (kept apart so the C logic stays readable). */
#ifndef PROFD_RENDER_SVG_ASSETS_H
#define PROFD_RENDER_SVG_ASSETS_H

extern const char render_svg_css[];
extern const char render_svg_js[];

#endif
